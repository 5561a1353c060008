-- Serialise buffer growth for one key: replenishment, returns and adjustments.
-- Transaction-scoped, so it is released at commit or rollback and works behind
-- PgBouncer in transaction pooling mode. $1 key hash.
SELECT pg_advisory_xact_lock($1::bigint)
