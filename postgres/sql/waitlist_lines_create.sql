-- Mark the keys a waiting checkout is short on. $1 shop, $2 checkout,
-- $3 seq, $4 items, $5 locations, $6 quantities.
INSERT INTO waiter_lines (shop_id, inventory_item_id, location_id, seq, checkout_id, quantity)
SELECT $1::bigint, x.item, x.location, $3::bigint, $2::uuid, x.qty
FROM unnest($4::bigint[], $5::bigint[], $6::int[]) AS x(item, location, qty)
