-- Which of a shop's keys have an open drop. ? keys (JSON: item_id,
-- location_id), ? shop.
SELECT d.inventory_item_id, d.location_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
JOIN drops d ON d.shop_id = ? AND d.inventory_item_id = j.item AND d.location_id = j.loc
WHERE d.state = 'open'
ORDER BY 1, 2
