-- Checkpoints since the server's statistics were last reset: on schedule
-- (checkpoint_timeout) and requested (WAL reaching max_wal_size, or a
-- CHECKPOINT command). PostgreSQL 15 and 16 (pg_stat_bgwriter);
-- checkpoints_17.sql reads PostgreSQL 17's pg_stat_checkpointer.
SELECT checkpoints_timed, checkpoints_req, coalesce(stats_reset::text, ''),
       current_setting('max_wal_size'), current_setting('checkpoint_timeout'),
       current_setting('full_page_writes'), current_setting('wal_compression'),
       (SELECT wal_bytes FROM pg_stat_wal)::bigint, pg_size_bytes(current_setting('max_wal_size'))
FROM pg_stat_bgwriter
