-- The write-ahead log's current write position, in bytes.
SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint
