-- Make an edited hold's lines exactly the given ones, once the extra units
-- are taken: lines no longer wanted go, the others are inserted or set to
-- their new quantity and the hold's expiry. Lines that keep their quantity
-- and expiry are not rewritten: their units never leave the checkout.
-- $1 checkout, $2 shop, $3 items, $4 locations, $5 quantities,
-- $6 expires_at, $7 created_at.
WITH x AS (
    SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::int[]) AS x(item, location, qty)
), gone AS (
    DELETE FROM reserved_quantities r
    WHERE r.shop_id = $2::bigint AND r.checkout_id = $1::uuid
      AND NOT EXISTS (SELECT 1 FROM x WHERE x.item = r.inventory_item_id AND x.location = r.location_id)
)
INSERT INTO reserved_quantities AS r
    (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT $2::bigint, x.item, x.location, $1::uuid, x.qty, $6::timestamptz, $7::timestamptz
FROM x
ORDER BY x.item, x.location
ON CONFLICT (shop_id, checkout_id, inventory_item_id, location_id)
DO UPDATE SET quantity = EXCLUDED.quantity, expires_at = EXCLUDED.expires_at
WHERE r.quantity <> EXCLUDED.quantity OR r.expires_at <> EXCLUDED.expires_at
