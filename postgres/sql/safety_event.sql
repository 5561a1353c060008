-- A safety stock change is a stock.changed event (delta 0, reason
-- 'safety', the level's available), so that key.sold_out and
-- key.back_in_stock follow it like any stock change (events_keys.sql).
-- It is no ledger entry: available does not change. $1 shop, $2 item,
-- $3 location, $4 now (NULL: database clock).
INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, created_at)
SELECT l.shop_id, 'stock.changed', l.inventory_item_id, l.location_id, 0, l.available, 'safety',
       coalesce($4::timestamptz, clock_timestamp())
FROM inventory_levels l
WHERE l.shop_id = $1::bigint AND l.inventory_item_id = $2::bigint AND l.location_id = $3::bigint
