-- Take a combined batch's units from the counter row it holds locked.
-- $1 shop, $2 item, $3 location, $4 units.
UPDATE inventory_counters
SET units = units - $4::int
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint AND slot = 0
