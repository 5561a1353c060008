-- Lock a key's level row if it exists and return its available: a
-- compare-and-set stock change's check, after the key's lock and its
-- buffers (lock order), creating nothing. No row: never stocked.
-- $1 shop, $2 item, $3 location.
SELECT available FROM inventory_levels
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
FOR UPDATE
