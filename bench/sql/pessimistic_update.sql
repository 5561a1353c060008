-- Step 5 of the single-row pessimistic pattern: the aggregate. $1 shop, $2 item, $3 location, $4 quantity.
UPDATE bench_pessimistic_items
SET reserved_stock = reserved_stock + $4::int
WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3
