-- Every key's pre-order accounting from one snapshot: its cap (0: none),
-- its companion's available and held units, and its owed units. The
-- companion's available must be cap - owed, and held + owed <= cap.
SELECT k.shop_id, k.inventory_item_id, k.location_id,
       COALESCE((SELECT p.cap FROM preorders p
                  WHERE p.shop_id = k.shop_id AND p.inventory_item_id = k.inventory_item_id AND p.location_id = k.location_id), 0),
       COALESCE((SELECT l.available FROM inventory_levels l
                  WHERE l.shop_id = k.shop_id AND l.inventory_item_id = k.inventory_item_id AND l.location_id = -k.location_id), 0),
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                  WHERE r.shop_id = k.shop_id AND r.inventory_item_id = k.inventory_item_id AND r.location_id = -k.location_id), 0),
       COALESCE((SELECT SUM(o.units) FROM preorder_owed o
                  WHERE o.shop_id = k.shop_id AND o.inventory_item_id = k.inventory_item_id AND o.location_id = k.location_id), 0)
FROM (SELECT shop_id, inventory_item_id, location_id FROM preorders
      UNION SELECT shop_id, inventory_item_id, location_id FROM preorder_owed
      UNION SELECT shop_id, inventory_item_id, -location_id FROM inventory_levels WHERE location_id < 0) k
ORDER BY 1, 2, 3
