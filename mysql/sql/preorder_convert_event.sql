-- The preorder.converted event of an owed line (delta: units converted,
-- available: units still owed), before the line changes. ? units, ? units,
-- ? now (NULL: the database clock), ? id.
INSERT INTO holdfast_events (shop_id, type, checkout_id, inventory_item_id, location_id, delta, available, reason, created_at)
SELECT o.shop_id, 'preorder.converted', o.checkout_id, o.inventory_item_id, o.location_id, ?, GREATEST(o.units - ?, 0), 'preorder',
       COALESCE(?, UTC_TIMESTAMP(6))
FROM preorder_owed o WHERE o.id = ?
