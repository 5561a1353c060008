-- Record a key's reported state. ? shop, ? item, ? location, ? sold out.
INSERT INTO holdfast_event_keys (shop_id, inventory_item_id, location_id, sold_out)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE sold_out = VALUES(sold_out)
