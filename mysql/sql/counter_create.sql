-- ? shop, ? item, ? location, ? units.
INSERT INTO inventory_counters (shop_id, inventory_item_id, location_id, units) VALUES (?, ?, ?, ?)
