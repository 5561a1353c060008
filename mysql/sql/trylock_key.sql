-- Take a key's lock row without waiting: no row means another transaction
-- holds it (or the key does not exist). ? shop, ? item, ? location.
SELECT 1 FROM inventory_locks
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
FOR UPDATE SKIP LOCKED
