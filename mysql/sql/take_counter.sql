-- Take q units from a counter row, waiting for the row; 0 rows affected
-- means the row is short (or missing). ? q, ? shop, ? item, ? location, ? q.
UPDATE inventory_counters SET units = units - ?
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? AND units >= ?
