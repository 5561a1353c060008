-- Add n pool rows to a key (n at most refillChunk: MySQL bounds recursion
-- at cte_max_recursion_depth, 1000 by default). ? n, ? shop, ? item,
-- ? location.
INSERT INTO reservation_units (shop_id, inventory_item_id, location_id)
WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ?)
SELECT ?, ?, ? FROM s
