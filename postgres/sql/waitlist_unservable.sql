-- The waits on the given keys that can never be served: a line asks more
-- of the key than its available stock less its safety stock — the bound a
-- wait is admitted under (held units may come back, claimed ones never
-- do, and the safety stock is never sold). $1 shops, $2 items, $3 locations, $4 limit.
SELECT DISTINCT l.shop_id, l.checkout_id
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(shop, item, loc)
JOIN waiter_lines l
  ON l.shop_id = k.shop AND l.inventory_item_id = k.item AND l.location_id = k.loc
LEFT JOIN inventory_levels v
       ON v.shop_id = k.shop AND v.inventory_item_id = k.item AND v.location_id = k.loc
WHERE l.quantity > coalesce(v.available, 0) - coalesce(v.safety, 0)
LIMIT $4::int
