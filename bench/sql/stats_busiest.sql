-- The table matching $1 (LIKE patterns) with the largest dead-tuple share.
SELECT relname::text, n_live_tup, n_dead_tup
FROM pg_stat_user_tables
WHERE relname LIKE ANY ($1::text[])
ORDER BY n_dead_tup::float8 / greatest(1, n_live_tup + n_dead_tup) DESC, relname
LIMIT 1
