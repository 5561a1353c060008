-- Create a shop's per-buyer limit of an item. ER_DUP_ENTRY: it exists.
-- ? shop, ? item, ? limit, ? window µs, ? now.
INSERT INTO buyer_limits (shop_id, inventory_item_id, buyer_limit, window_us, updated_at)
VALUES (?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
