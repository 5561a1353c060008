-- Set a key's drop, open, with a fresh seed (replacing any drop of the
-- key). ? shop, ? item, ? location, ? starts_at, ? window µs, ? seed.
INSERT INTO drops (shop_id, inventory_item_id, location_id, starts_at, window_us, seed, state)
VALUES (?, ?, ?, ?, ?, ?, 'open')
ON DUPLICATE KEY UPDATE starts_at = VALUES(starts_at), window_us = VALUES(window_us),
                        seed = VALUES(seed), state = 'open', drawn_at = NULL
