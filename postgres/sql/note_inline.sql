-- Count a buyer-facing (inline) replenishment of a key, for operators.
-- $1 shop, $2 item, $3 location.
INSERT INTO replenish_stats AS s (shop_id, inventory_item_id, location_id, inline_count, last_inline_at)
VALUES ($1::bigint, $2::bigint, $3::bigint, 1, clock_timestamp())
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET inline_count = s.inline_count + 1, last_inline_at = clock_timestamp()
