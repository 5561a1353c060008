-- The replication picture as this server sees it: whether it is a standby,
-- its timeline, synchronous_standby_names and synchronous_commit, and its
-- WAL senders: how many stream, how many are synchronous, how many hide
-- their state (a role without pg_read_all_stats sees NULL), and the
-- largest replay lag in bytes and seconds.
SELECT pg_is_in_recovery(),
       (SELECT timeline_id FROM pg_control_checkpoint())::int,
       current_setting('synchronous_standby_names'),
       current_setting('synchronous_commit'),
       (SELECT count(*) FROM pg_stat_replication)::int,
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))::int,
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL)::int,
       coalesce((SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)) FROM pg_stat_replication
                 WHERE NOT pg_is_in_recovery()), 0)::bigint,
       coalesce((SELECT extract(epoch FROM max(replay_lag)) FROM pg_stat_replication), 0)::float8
