-- This database's transaction counters since the last statistics reset.
SELECT xact_commit, xact_rollback, deadlocks, coalesce(stats_reset, pg_postmaster_start_time())
FROM pg_stat_database
WHERE datname = current_database()
