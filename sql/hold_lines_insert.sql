-- The active hold's lines. $1 shop, $2 checkout, $3 items, $4 locations,
-- $5 quantities, $6 expires_at, $7 created_at.
INSERT INTO reserved_quantities
    (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT $1::bigint, l.item, l.location, $2::uuid, l.qty, $6::timestamptz, $7::timestamptz
FROM unnest($3::bigint[], $4::bigint[], $5::int[]) AS l(item, location, qty)
