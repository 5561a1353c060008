-- Take a key's lock row, waiting: the per-key lock of refills,
-- adjustments, strategy changes and late claims. No row: the key is new.
-- ? shop, ? item, ? location.
SELECT 1 FROM inventory_locks
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
FOR UPDATE
