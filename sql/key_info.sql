-- Strategy and pool cap of keys; keys without a level row get the defaults.
-- $1 shop, $2 items, $3 locations, $4 default strategy, $5 default pool cap.
SELECT k.item, k.location,
       coalesce(l.strategy, $4::text),
       coalesce(l.pool_cap, $5::int)
FROM unnest($2::bigint[], $3::bigint[]) AS k(item, location)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
