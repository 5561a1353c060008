-- Lock one counter row of a combined batch, waiting; keys are locked in key
-- order. ? shop, ? item, ? location.
SELECT units FROM inventory_counters
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
FOR UPDATE
