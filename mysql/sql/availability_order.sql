-- availability.sql over the shop's default location order, read by the
-- same statement (no order: no rows).
-- ? shop, ? items (JSON array).
SELECT i.item, s.location,
       COALESCE(l.available, 0) - COALESCE(l.safety, 0),
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                 WHERE r.shop_id = lo.shop_id AND r.inventory_item_id = i.item AND r.location_id = s.location), 0),
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = lo.shop_id AND w.inventory_item_id = i.item AND w.location_id = s.location),
       COALESCE(l.available > 0
                OR EXISTS (SELECT 1 FROM inventory_ledger g
                           WHERE g.shop_id = lo.shop_id AND g.inventory_item_id = i.item
                             AND g.location_id = s.location), FALSE),
       -- The pre-order headroom: the companion key's (preorder.go)
       -- available less its held units.
       COALESCE((SELECT c.available FROM inventory_levels c
                 WHERE c.shop_id = lo.shop_id AND c.inventory_item_id = i.item AND c.location_id = -s.location), 0)
       - COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                   WHERE r.shop_id = lo.shop_id AND r.inventory_item_id = i.item AND r.location_id = -s.location), 0)
FROM location_orders lo
CROSS JOIN JSON_TABLE(lo.locations, '$[*]' COLUMNS (
         n        FOR ORDINALITY,
         location BIGINT PATH '$')) s
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         m    FOR ORDINALITY,
         item BIGINT PATH '$')) i
LEFT JOIN inventory_levels l
       ON l.shop_id = lo.shop_id AND l.inventory_item_id = i.item AND l.location_id = s.location
WHERE lo.shop_id = ?
ORDER BY i.m, s.n
