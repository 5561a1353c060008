-- Apply the reservation only if nobody changed the key since it was read.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 version read.
UPDATE bench_opt_items
SET reserved = reserved + $4::int, version = version + 1
WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3 AND version = $5
