-- Create a new hold's lines, once their units are taken.
-- $1 checkout, $2 shop, $3 items, $4 locations, $5 quantities,
-- $6 expires_at, $7 created_at.
INSERT INTO reserved_quantities
    (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT $2::bigint, x.item, x.location, $1::uuid, x.qty, $6::timestamptz, $7::timestamptz
FROM unnest($3::bigint[], $4::bigint[], $5::int[]) AS x(item, location, qty)
