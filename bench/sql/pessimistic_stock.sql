-- $1 shop, $2 items, $3 locations, $4 stock per key.
INSERT INTO bench_pessimistic_items (shop_id, inventory_item_id, location_id, stock)
SELECT $1::bigint, i, l, $4::int FROM unnest($2::bigint[], $3::bigint[]) AS k(i, l)
