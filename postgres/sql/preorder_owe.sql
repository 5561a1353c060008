-- Record a claimed checkout's pre-ordered lines as owed. $1 shop,
-- $2 checkout, $3 the hold's creation, $4 items, $5 companion locations
-- (negative), $6 units.
INSERT INTO preorder_owed (shop_id, inventory_item_id, location_id, checkout_id, units, created_at)
SELECT $1::bigint, t.item, -t.loc, $2::uuid, t.units, $3::timestamptz
FROM unnest($4::bigint[], $5::bigint[], $6::int[]) AS t(item, loc, units)
