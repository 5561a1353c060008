-- ? shop, ? item, ? location, ? available, ? now.
INSERT INTO inventory_levels (shop_id, inventory_item_id, location_id, available, updated_at)
VALUES (?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
