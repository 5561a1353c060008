-- Turn a key's pre-orders off (cap 0). ? shop, ? item, ? location.
DELETE FROM preorders WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
