-- Set a shop's default location order (an operator's write, off the
-- reservation path, so the upsert's next-key lock is harmless).
-- ? shop, ? locations (JSON).
INSERT INTO location_orders (shop_id, locations, updated_at)
VALUES (?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE locations = VALUES(locations), updated_at = VALUES(updated_at)
