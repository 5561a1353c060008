-- ? shop, ? item, ? location, ? delta, ? available after, ? reason,
-- ? reference, ? now.
INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
