-- The stream's slot, made before the subscription (a subscription that
-- made its own slot could not reach a source in its own cluster).
SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')
