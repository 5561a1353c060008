-- A stream's slot: slots are the cluster's, so the name carries the
-- source database's oid beside the shop (two databases of one cluster
-- may move the same shop id at once).
SELECT format('holdfast_move_%s_%s', $1::bigint, (SELECT oid FROM pg_database WHERE datname = current_database()))
