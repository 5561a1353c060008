-- Per key of a cart, under the keys' advisory locks: available less the
-- safety stock (what could ever be sold), held (every hold, expired and
-- unswept included) and whether the key has waiters.
-- $1 shop, $2 items, $3 locations.
SELECT (coalesce(l.available, 0) - coalesce(l.safety, 0))::int,
       (SELECT coalesce(sum(r.held), 0) FROM held_counts r
         WHERE r.shop_id = $1::bigint AND r.inventory_item_id = k.item AND r.location_id = k.location)::int,
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = $1::bigint AND w.inventory_item_id = k.item AND w.location_id = k.location)
FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(item, location, n)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
ORDER BY k.n
