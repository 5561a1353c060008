-- Lock every slot of a counter or slotted key that has units, in slot order,
-- waiting for other reservers, and return them as they are now (a top-level
-- SELECT … FOR UPDATE re-reads rows updated since the statement's snapshot).
-- Used under the key's advisory lock. $1 shop, $2 item, $3 location.
SELECT slot, units
FROM inventory_counters
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
  AND units > 0
ORDER BY slot
FOR UPDATE
