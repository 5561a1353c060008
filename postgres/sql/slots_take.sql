-- Take units from slots the transaction holds locked (sql/slots_lock.sql).
-- $1 shop, $2 item, $3 location, $4 slots, $5 units per slot.
UPDATE inventory_counters ic
SET units = ic.units - p.take
FROM unnest($4::int[], $5::int[]) AS p(slot, take)
WHERE ic.shop_id = $1::bigint AND ic.inventory_item_id = $2::bigint
  AND ic.location_id = $3::bigint AND ic.slot = p.slot
