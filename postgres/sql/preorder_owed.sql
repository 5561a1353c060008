-- A key's owed pre-order lines, oldest first, locked (under the key's
-- lock). $1 shop, $2 item, $3 location, $4 limit.
SELECT id, checkout_id, units FROM preorder_owed
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
ORDER BY created_at, id
LIMIT $4::int
FOR UPDATE
