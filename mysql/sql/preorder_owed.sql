-- A key's owed pre-order lines, oldest first, locked (under the key's
-- lock). ? shop, ? item, ? location, ? limit.
SELECT id, checkout_id, units FROM preorder_owed
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
ORDER BY created_at, id
LIMIT ?
FOR UPDATE
