-- Read a key's stock and version without locking. $1 shop, $2 item, $3 location.
SELECT stock, reserved, version
FROM bench_opt_items
WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3
