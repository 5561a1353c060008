-- ? strategy, ? pool cap (NULL: default), ? shop, ? item, ? location.
UPDATE inventory_levels SET strategy = ?, pool_cap = ?
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
