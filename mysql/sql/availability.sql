-- What a buyer could reserve now (Engine.Availability), in one statement:
-- one consistent read, no locks, no writes. Per key of items × locations,
-- in that order: available less safety stock, held (as sellable.sql counts
-- it), whether the key has waiters, whether it was ever stocked (as
-- not_stocked.sql says). The locations named by the query; without them,
-- availability_order.sql.
-- ? shop, ? items (JSON array), ? locations (JSON array).
SELECT i.item, s.location,
       COALESCE(l.available, 0) - COALESCE(l.safety, 0),
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                 WHERE r.shop_id = p.shop AND r.inventory_item_id = i.item AND r.location_id = s.location), 0),
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = p.shop AND w.inventory_item_id = i.item AND w.location_id = s.location),
       COALESCE(l.available > 0
                OR EXISTS (SELECT 1 FROM inventory_ledger g
                           WHERE g.shop_id = p.shop AND g.inventory_item_id = i.item
                             AND g.location_id = s.location), FALSE),
       -- The pre-order headroom: the companion key's (preorder.go)
       -- available less its held units.
       COALESCE((SELECT c.available FROM inventory_levels c
                 WHERE c.shop_id = p.shop AND c.inventory_item_id = i.item AND c.location_id = -s.location), 0)
       - COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                   WHERE r.shop_id = p.shop AND r.inventory_item_id = i.item AND r.location_id = -s.location), 0)
FROM (SELECT ? AS shop) p
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         m    FOR ORDINALITY,
         item BIGINT PATH '$')) i
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n        FOR ORDINALITY,
         location BIGINT PATH '$')) s
LEFT JOIN inventory_levels l
       ON l.shop_id = p.shop AND l.inventory_item_id = i.item AND l.location_id = s.location
ORDER BY i.m, s.n
