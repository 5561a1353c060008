-- Convert units of an owed line: take them off (delete the line at 0) and
-- write its preorder.converted event (delta: units converted, available:
-- units still owed). $1 id, $2 units, $3 now (NULL: database clock),
-- $4 shop.
WITH d AS (
    DELETE FROM preorder_owed WHERE shop_id = $4::bigint AND id = $1::bigint AND units <= $2::int
    RETURNING shop_id, inventory_item_id, location_id, checkout_id, 0 AS left_units
), u AS (
    UPDATE preorder_owed SET units = units - $2::int WHERE shop_id = $4::bigint AND id = $1::bigint AND units > $2::int
    RETURNING shop_id, inventory_item_id, location_id, checkout_id, units AS left_units
), o AS (SELECT * FROM d UNION ALL SELECT * FROM u)
INSERT INTO holdfast_events (shop_id, type, checkout_id, inventory_item_id, location_id, delta, available, reason, created_at)
SELECT o.shop_id, 'preorder.converted', o.checkout_id, o.inventory_item_id, o.location_id, $2::int, o.left_units, 'preorder',
       coalesce($3::timestamptz, clock_timestamp())
FROM o
