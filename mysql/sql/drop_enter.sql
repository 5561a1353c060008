-- Record an entrant; ER_DUP_ENTRY: the buyer entered already. ? shop,
-- ? item, ? location, ? buyer hash, ? checkout, ? wait µs.
INSERT INTO drop_entries (shop_id, inventory_item_id, location_id, buyer_hash, checkout_id, wait_us)
VALUES (?, ?, ?, ?, ?, ?)
