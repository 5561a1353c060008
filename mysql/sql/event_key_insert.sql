-- A derived key event. ? shop, ? type, ? item, ? location, ? available, ? now.
INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, available, created_at)
VALUES (?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
