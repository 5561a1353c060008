-- The pre-order settings and counts of a shop's keys that have one: units
-- held on the companion key and owed. ? shop, ? keys as JSON
-- [{"item_id":…,"location_id":…}].
SELECT p.inventory_item_id, p.location_id, p.cap, p.expected_at,
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                  WHERE r.shop_id = p.shop_id AND r.inventory_item_id = p.inventory_item_id
                    AND r.location_id = -p.location_id), 0),
       COALESCE((SELECT SUM(o.units) FROM preorder_owed o
                  WHERE o.shop_id = p.shop_id AND o.inventory_item_id = p.inventory_item_id
                    AND o.location_id = p.location_id), 0)
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) k
JOIN preorders p ON p.shop_id = ? AND p.inventory_item_id = k.item AND p.location_id = k.loc
ORDER BY 1, 2
