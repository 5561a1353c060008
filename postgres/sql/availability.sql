-- What a buyer could reserve now (Engine.Availability), in one statement:
-- one snapshot, no locks, no writes. Per key of items × locations, in that
-- order: available less safety stock, held (as sellable.sql counts it),
-- whether the key has waiters, whether it was ever stocked (as
-- not_stocked.sql says). Locations empty: the shop's default location
-- order, read here too (no order: no rows).
-- $1 shop, $2 items, $3 locations.
WITH locs AS (
    SELECT q.location, q.n
    FROM unnest($3::bigint[]) WITH ORDINALITY AS q(location, n)
    UNION ALL
    SELECT o.location, o.n
    FROM location_orders lo
    CROSS JOIN LATERAL unnest(lo.locations) WITH ORDINALITY AS o(location, n)
    WHERE lo.shop_id = $1::bigint AND coalesce(cardinality($3::bigint[]), 0) = 0
)
SELECT k.item, k.location,
       (coalesce(l.available, 0) - coalesce(l.safety, 0))::int,
       (SELECT coalesce(sum(r.held), 0)
        FROM held_counts r
        WHERE r.shop_id = $1::bigint AND r.inventory_item_id = k.item AND r.location_id = k.location)::int,
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = $1::bigint AND w.inventory_item_id = k.item AND w.location_id = k.location),
       coalesce(l.available > 0
                OR EXISTS (SELECT 1 FROM inventory_ledger g
                           WHERE g.shop_id = $1::bigint AND g.inventory_item_id = k.item
                             AND g.location_id = k.location), false)
FROM (SELECT i.item, i.m, s.location, s.n
      FROM unnest($2::bigint[]) WITH ORDINALITY AS i(item, m)
      CROSS JOIN locs s) k
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
ORDER BY k.m, k.n
