-- Set a key's drop, open, with a fresh seed (replacing any drop of the
-- key). $1 shop, $2 item, $3 location, $4 starts_at, $5 window µs, $6 seed.
INSERT INTO drops (shop_id, inventory_item_id, location_id, starts_at, window_us, seed, state)
VALUES ($1::bigint, $2::bigint, $3::bigint, $4::timestamptz, $5::bigint, $6::bytea, 'open')
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET starts_at = EXCLUDED.starts_at, window_us = EXCLUDED.window_us,
              seed = EXCLUDED.seed, state = 'open', drawn_at = NULL
