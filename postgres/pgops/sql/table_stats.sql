-- Live and dead tuples and vacuum history of the tables that churn: the
-- reservation_units partitions, inventory_counters, holds and
-- reserved_quantities. Partitions come in numeric order.
SELECT s.relname,
       s.n_live_tup,
       s.n_dead_tup,
       s.last_autovacuum,
       s.last_vacuum,
       s.autovacuum_count,
       s.vacuum_count
FROM pg_stat_user_tables s
WHERE s.schemaname = ANY (current_schemas(false))
  AND (s.relname ~ '^reservation_units_p[0-9]+$'
       OR s.relname IN ('inventory_counters', 'holds', 'reserved_quantities'))
ORDER BY s.relname !~ '^reservation_units_p', length(s.relname), s.relname
