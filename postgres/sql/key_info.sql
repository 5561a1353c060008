-- Strategy and pool cap of keys, in the order of the input (the code pairs
-- row i with line i; without the ORDER BY a hash join returns them in the
-- levels table's order). Keys without a level row get the defaults.
-- $1 shop, $2 items, $3 locations, $4 default strategy, $5 default pool cap.
SELECT k.item, k.location,
       coalesce(l.strategy, $4::text),
       coalesce(l.pool_cap, $5::int)
FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(item, location, n)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
ORDER BY k.n
