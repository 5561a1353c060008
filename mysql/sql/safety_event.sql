-- A safety stock change is a stock.changed event (delta 0, reason
-- 'safety', the level's available), so that key.sold_out and
-- key.back_in_stock follow it like any stock change (events.go). It is no
-- ledger entry: available does not change. ? now (NULL: the database
-- clock), ? shop, ? item, ? location.
INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, created_at)
SELECT l.shop_id, 'stock.changed', l.inventory_item_id, l.location_id, 0, l.available, 'safety',
       COALESCE(?, UTC_TIMESTAMP(6))
FROM inventory_levels l
WHERE l.shop_id = ? AND l.inventory_item_id = ? AND l.location_id = ?
