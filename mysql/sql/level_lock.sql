-- ? shop, ? item, ? location.
SELECT available FROM inventory_levels
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
FOR UPDATE
