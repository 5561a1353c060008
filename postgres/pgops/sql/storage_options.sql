-- Storage options of the reservation_units partitions and
-- inventory_counters, partitions in numeric order.
SELECT c.relname::text, coalesce(c.reloptions, '{}'::text[])
FROM pg_class c
WHERE c.oid IN (SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = 'reservation_units'::regclass)
   OR c.oid = 'inventory_counters'::regclass
ORDER BY c.relname = 'inventory_counters', length(c.relname), c.relname
