-- Move a merged checkout's reserved lines to its destination, summed per
-- key, at the destination's expiry: the units stay reserved (held_counts'
-- triggers see a delete and an insert or update of the same key).
-- $1 source checkout, $2 shop, $3 destination checkout.
WITH src AS (
    DELETE FROM reserved_quantities
    WHERE shop_id = $2::bigint AND checkout_id = $1::uuid
    RETURNING inventory_item_id, location_id, quantity
), dst AS (
    SELECT expires_at FROM holds WHERE checkout_id = $3::uuid AND shop_id = $2::bigint
)
INSERT INTO reserved_quantities AS r
    (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
SELECT $2::bigint, src.inventory_item_id, src.location_id, $3::uuid, src.quantity, dst.expires_at
FROM src, dst
ORDER BY src.inventory_item_id, src.location_id
ON CONFLICT (shop_id, checkout_id, inventory_item_id, location_id)
DO UPDATE SET quantity = r.quantity + EXCLUDED.quantity
