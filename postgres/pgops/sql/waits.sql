-- What active sessions of this database wait on right now, with the longest
-- wait, most common first.
SELECT wait_event_type, wait_event, count(*)::int,
       max(extract(epoch FROM clock_timestamp() - state_change))::float8
FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend'
  AND state = 'active' AND wait_event_type IS NOT NULL
  AND pid <> pg_backend_pid()
GROUP BY 1, 2
ORDER BY 3 DESC, 1, 2
LIMIT 20
