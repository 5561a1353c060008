-- A stream's slots on the source: the subscription's ($1) and its table
-- syncs' (pg_<subscription oid>_sync_…, prefix $2; left behind when a
-- copy was cut short), and whether a subscriber is attached to each.
SELECT slot_name, active FROM pg_replication_slots
WHERE database = current_database()
  AND (slot_name = $1 OR ($2::text <> '' AND starts_with(slot_name::text, $2::text)))
