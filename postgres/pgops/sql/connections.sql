-- Client connections to the server against max_connections.
SELECT count(*)::int, current_setting('max_connections')::int
FROM pg_stat_activity
WHERE backend_type = 'client backend'
