-- Which keys of a short reservation never had stock set, in the given
-- order: a mistyped id must not read as a sell-out (not_stocked). Never
-- stocked: no level row, or one a strategy or safety stock made (available
-- 0) with no stock change in the ledger.
-- ? shop, ? lines (JSON of item_id, location_id).
SELECT l.shop_id IS NULL
       OR (l.available = 0 AND NOT EXISTS (SELECT 1 FROM inventory_ledger g
                                           WHERE g.shop_id = s.shop AND g.inventory_item_id = j.item
                                             AND g.location_id = j.loc))
FROM (SELECT ? AS shop) s
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
LEFT JOIN inventory_levels l
       ON l.shop_id = s.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
