-- A replaced drop's entries go. ? shop, ? item, ? location.
DELETE FROM drop_entries WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
