-- What holds back vacuum's xmin horizon in this database, oldest first:
-- sessions with a snapshot, replication slots, prepared transactions.
-- $1 bounds the rows.
SELECT kind, name, caller, state, query, xact_seconds, xmin_age FROM (
    SELECT 'session' AS kind, a.pid::text AS name,
           coalesce(a.application_name, '') AS caller,
           coalesce(a.state, '') AS state,
           left(coalesce(a.query, ''), 1000) AS query,
           extract(epoch FROM clock_timestamp() - a.xact_start)::float8 AS xact_seconds,
           age(a.backend_xmin)::bigint AS xmin_age
    FROM pg_stat_activity a
    WHERE a.datname = current_database() AND a.backend_xmin IS NOT NULL
      AND a.pid <> pg_backend_pid()
    UNION ALL
    SELECT 'replication slot', s.slot_name::text, coalesce(s.plugin::text, 'physical'),
           CASE WHEN s.active THEN 'active' ELSE 'inactive' END, '', NULL,
           greatest(age(s.xmin), age(s.catalog_xmin))::bigint
    FROM pg_replication_slots s
    WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
    UNION ALL
    SELECT 'prepared transaction', p.gid, p.owner::text, 'prepared', '',
           extract(epoch FROM clock_timestamp() - p.prepared)::float8, age(p.transaction)::bigint
    FROM pg_prepared_xacts p
    WHERE p.database = current_database()
) h
ORDER BY xmin_age DESC NULLS LAST
LIMIT $1::int
