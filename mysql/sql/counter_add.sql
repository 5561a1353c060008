-- ? units, ? shop, ? item, ? location. 0 rows affected: no counter row yet.
UPDATE inventory_counters SET units = units + ?
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
