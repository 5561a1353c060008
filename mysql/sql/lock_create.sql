-- A new key's lock row. ER_DUP_ENTRY: another transaction created it
-- meanwhile; run again. ? shop, ? item, ? location.
INSERT INTO inventory_locks (shop_id, inventory_item_id, location_id) VALUES (?, ?, ?)
