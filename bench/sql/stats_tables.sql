-- Dead tuples now, and row versions made dead so far (updates + deletes), over
-- the tables matching the LIKE patterns in $1.
SELECT coalesce(sum(n_dead_tup), 0)::bigint, coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint
FROM pg_stat_user_tables
WHERE relname LIKE ANY ($1::text[])
