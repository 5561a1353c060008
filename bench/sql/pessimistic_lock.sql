-- Step 2 of the single-row pessimistic pattern: lock the item row. $1 shop, $2 item, $3 location.
SELECT stock, reserved_stock
FROM bench_pessimistic_items
WHERE shop_id = $1 AND inventory_item_id = $2 AND location_id = $3
FOR UPDATE
