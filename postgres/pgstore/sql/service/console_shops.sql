-- The shops with stock, in id order, at most $1: a skip scan of
-- inventory_levels' primary key (one index probe per shop, however many
-- keys a shop has).
-- $1 how many
WITH RECURSIVE shops(shop_id, n) AS (
    (SELECT shop_id, 1 FROM inventory_levels ORDER BY shop_id LIMIT 1)
    UNION ALL
    SELECT (SELECT l.shop_id FROM inventory_levels l WHERE l.shop_id > s.shop_id ORDER BY l.shop_id LIMIT 1), s.n + 1
    FROM shops s
    WHERE s.shop_id IS NOT NULL AND s.n < $1::int
)
SELECT shop_id FROM shops WHERE shop_id IS NOT NULL
