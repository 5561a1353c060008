-- Available and held per key, from one snapshot and without locks: the cheap
-- sold-out test that keeps sold-out reserves off the replenishment lock.
-- $1 shop, $2 items, $3 locations. The arrays are read through
-- subqueries so that a custom plan cannot see their length: no custom plan
-- then looks cheaper than the cached generic one, and the statement is not
-- planned on every call, which cost several times its run (and every probe
-- added to it, such as the drops one, added planning; docs/PERFORMANCE.md,
-- "Costs of the commerce features").
SELECT (coalesce(l.available, 0) - coalesce(l.safety, 0))::int, -- safety stock is not for sale
       (SELECT coalesce(sum(r.held), 0)
        FROM held_counts r
        WHERE r.shop_id = $1::bigint AND r.inventory_item_id = k.item AND r.location_id = k.location)::int,
       -- Whether the key has waiters (waitlist.go): then nothing is sellable
       -- to a new buyer.
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = $1::bigint AND w.inventory_item_id = k.item AND w.location_id = k.location)
       -- Nor to anyone outside the lottery while the key's drop is open.
       OR EXISTS (SELECT 1 FROM drops d
                  WHERE d.shop_id = $1::bigint AND d.inventory_item_id = k.item
                    AND d.location_id = k.location AND d.state = 'open')
FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[])) WITH ORDINALITY AS k(item, location, n)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
ORDER BY k.n
