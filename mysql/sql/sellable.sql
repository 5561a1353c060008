-- available and held per line, in the lines' order, from one snapshot,
-- without locks. ? shop, ? lines (JSON).
SELECT COALESCE(l.available, 0) - COALESCE(l.safety, 0), -- safety stock is not for sale
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                 WHERE r.shop_id = s.shop AND r.inventory_item_id = j.item AND r.location_id = j.loc), 0),
       -- Whether the key has waiters (waitlist.go): nothing sellable then.
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = s.shop AND w.inventory_item_id = j.item AND w.location_id = j.loc)
       -- Nor to anyone outside the lottery while the key's drop is open.
       OR EXISTS (SELECT 1 FROM drops d
                  WHERE d.shop_id = s.shop AND d.inventory_item_id = j.item
                    AND d.location_id = j.loc AND d.state = 'open')
FROM (SELECT ? AS shop) s
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
LEFT JOIN inventory_levels l
       ON l.shop_id = s.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
