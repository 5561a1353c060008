-- What the run database's busy backends are doing: wait event, or CPU when
-- none. Backends idle in a transaction wait on the client (Client:ClientRead).
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)::int
FROM pg_stat_activity
WHERE datname = $1 AND state IN ('active', 'idle in transaction') AND pid <> pg_backend_pid()
GROUP BY 1
