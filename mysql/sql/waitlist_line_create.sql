-- Mark a key a waiting checkout is short on. ? shop, ? item, ? location,
-- ? seq, ? checkout, ? quantity.
INSERT INTO waiter_lines (shop_id, inventory_item_id, location_id, seq, checkout_id, quantity)
VALUES (?, ?, ?, ?, ?, ?)
