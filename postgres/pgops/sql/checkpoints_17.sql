-- checkpoints.sql for PostgreSQL 17 and later, which count checkpoints in
-- pg_stat_checkpointer.
SELECT num_timed, num_requested, coalesce(stats_reset::text, ''),
       current_setting('max_wal_size'), current_setting('checkpoint_timeout'),
       current_setting('full_page_writes'), current_setting('wal_compression'),
       (SELECT wal_bytes FROM pg_stat_wal)::bigint, pg_size_bytes(current_setting('max_wal_size'))
FROM pg_stat_checkpointer
