-- Remove up to n units from a counter row. ? n, ? shop, ? item, ? location.
UPDATE inventory_counters SET units = units - LEAST(units, ?)
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
