-- Write a key's pre-order setting. $1 shop, $2 item, $3 location, $4 cap
-- (> 0), $5 expected_at, $6 now (NULL: database clock).
INSERT INTO preorders (shop_id, inventory_item_id, location_id, cap, expected_at, updated_at)
VALUES ($1::bigint, $2::bigint, $3::bigint, $4::int, $5::timestamptz, coalesce($6::timestamptz, clock_timestamp()))
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET cap = EXCLUDED.cap, expected_at = EXCLUDED.expected_at, updated_at = EXCLUDED.updated_at
