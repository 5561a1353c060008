-- Take a buyer's lock row for an item, creating it when missing, waiting:
-- one buyer's reservations of a limited item check and commit one at a
-- time. In the transaction, on its own connection: on a duplicate key
-- INSERT … ON DUPLICATE KEY UPDATE takes the row's exclusive lock at once
-- (a plain INSERT would take a shared one, and two shared holders upgrading
-- to exclusive deadlock). ? shop, ? item, ? hash.
INSERT INTO buyer_locks (shop_id, inventory_item_id, buyer_hash) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE buyer_hash = buyer_hash
