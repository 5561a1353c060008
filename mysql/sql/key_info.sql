-- Each line's allocation strategy and pool cap, in the lines' order.
-- ? default strategy, ? default pool cap, ? lines (JSON), ? shop.
SELECT j.item, j.loc, COALESCE(l.strategy, ?), COALESCE(l.pool_cap, ?)
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
LEFT JOIN inventory_levels l
       ON l.shop_id = ? AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
