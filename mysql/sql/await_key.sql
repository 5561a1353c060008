-- Wait for whoever holds a key's lock row, sharing the wait with others.
-- ? shop, ? item, ? location.
SELECT 1 FROM inventory_locks
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
LOCK IN SHARE MODE
