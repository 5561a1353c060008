-- Client sessions of this database (all databases when $2), for the
-- activity sampler: who holds a connection, in what state, for how long.
-- The sampler's own session is left out. $1 bounds the rows.
SELECT pid,
       coalesce(application_name, ''),
       coalesce(state, ''),
       left(coalesce(query, ''), 1000),
       xact_start IS NOT NULL,
       coalesce(extract(epoch FROM clock_timestamp() - xact_start), 0)::float8,
       coalesce(extract(epoch FROM clock_timestamp() - state_change), 0)::float8,
       coalesce(state_change, backend_start),
       coalesce(wait_event_type, ''),
       coalesce(wait_event, ''),
       coalesce(age(backend_xmin), 0)::bigint,
       coalesce(datname, '')
FROM pg_stat_activity
WHERE backend_type = 'client backend'
  AND ($2::bool OR datname = current_database())
  AND pid <> pg_backend_pid()
ORDER BY pid
LIMIT $1::int
