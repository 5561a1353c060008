-- What a buyer could reserve now (Engine.Availability), in one statement:
-- one snapshot, no locks, no writes. Per key of items × locations, in that
-- order: available less safety stock, held (as sellable.sql counts it),
-- whether the key has waiters, whether it was ever stocked (as
-- not_stocked.sql says), the pre-order headroom. Locations empty: the shop's default location
-- order, read here too (no order: unnest(NULL), no rows). Kept plain — no
-- CTE, no UNION. The arrays are read through subqueries so that a custom
-- plan cannot see their length: no custom plan then looks cheaper than the
-- cached generic one, and the statement is not planned per call (which
-- cost two to three times its run) — as sellable.sql and refill.sql.
-- $1 shop, $2 items, $3 locations.
SELECT i.item, s.location,
       (coalesce(l.available, 0) - coalesce(l.safety, 0))::int,
       (SELECT coalesce(sum(r.held), 0)
        FROM held_counts r
        WHERE r.shop_id = $1::bigint AND r.inventory_item_id = i.item AND r.location_id = s.location)::int,
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = $1::bigint AND w.inventory_item_id = i.item AND w.location_id = s.location),
       coalesce(l.available > 0
                OR EXISTS (SELECT 1 FROM inventory_ledger g
                           WHERE g.shop_id = $1::bigint AND g.inventory_item_id = i.item
                             AND g.location_id = s.location), false),
       -- The pre-order headroom: the companion key's (preorder.go)
       -- available less its held units.
       (coalesce((SELECT c.available FROM inventory_levels c
                  WHERE c.shop_id = $1::bigint AND c.inventory_item_id = i.item AND c.location_id = -s.location), 0)
        - (SELECT coalesce(sum(r.held), 0) FROM held_counts r
           WHERE r.shop_id = $1::bigint AND r.inventory_item_id = i.item AND r.location_id = -s.location))::int
FROM unnest((SELECT $2::bigint[])) WITH ORDINALITY AS i(item, m)
CROSS JOIN unnest(coalesce(nullif((SELECT $3::bigint[]), '{}'),
                           (SELECT o.locations FROM location_orders o WHERE o.shop_id = $1::bigint)))
           WITH ORDINALITY AS s(location, n)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = i.item AND l.location_id = s.location
ORDER BY i.m, s.n
