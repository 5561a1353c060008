-- Create a buyer's lock row for an item unless it exists; run autocommit,
-- outside the reservation's transaction. ? shop, ? item, ? buyer hash.
INSERT IGNORE INTO buyer_locks (shop_id, inventory_item_id, buyer_hash) VALUES (?, ?, ?)
