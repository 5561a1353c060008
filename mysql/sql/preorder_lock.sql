-- A key's pre-order setting, locked (SetPreorder, under the companion
-- key's lock). ? shop, ? item, ? location.
SELECT cap, expected_at FROM preorders
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
FOR UPDATE
