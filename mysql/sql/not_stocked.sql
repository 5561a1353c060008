-- Which keys of a short reservation never had stock set (no level row), in
-- the given order: a mistyped id must not read as a sell-out (not_stocked).
-- ? shop, ? lines (JSON of item_id, location_id).
SELECT l.shop_id IS NULL
FROM (SELECT ? AS shop) s
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
LEFT JOIN inventory_levels l
       ON l.shop_id = s.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
