-- Take a buyer's lock row for an item, waiting: one buyer's reservations of
-- a limited item check and commit one at a time. ? shop, ? item, ? hash.
SELECT 1 FROM buyer_locks
WHERE shop_id = ? AND inventory_item_id = ? AND buyer_hash = ?
FOR UPDATE
