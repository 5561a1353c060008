-- Write a key's pre-order setting. ? shop, ? item, ? location, ? cap
-- (> 0), ? expected_at, ? now (NULL: the database clock).
INSERT INTO preorders (shop_id, inventory_item_id, location_id, cap, expected_at, updated_at)
VALUES (?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
ON DUPLICATE KEY UPDATE cap = VALUES(cap), expected_at = VALUES(expected_at), updated_at = VALUES(updated_at)
