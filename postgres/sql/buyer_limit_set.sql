-- Create or replace a shop's per-buyer limit of an item.
-- $1 shop, $2 item, $3 limit, $4 window µs.
INSERT INTO buyer_limits (shop_id, inventory_item_id, buyer_limit, window_us)
VALUES ($1::bigint, $2::bigint, $3::int, $4::bigint)
ON CONFLICT (shop_id, inventory_item_id)
DO UPDATE SET buyer_limit = EXCLUDED.buyer_limit, window_us = EXCLUDED.window_us, updated_at = clock_timestamp()
