-- Every key's pre-order accounting from one snapshot: its cap (0: none),
-- its companion's available and held units, and its owed units. The
-- companion's available must be cap - owed, and held + owed <= cap.
WITH keys AS (
    SELECT shop_id, inventory_item_id, location_id FROM preorders
    UNION SELECT shop_id, inventory_item_id, location_id FROM preorder_owed
    UNION SELECT shop_id, inventory_item_id, -location_id FROM inventory_levels WHERE location_id < 0
)
SELECT k.shop_id, k.inventory_item_id, k.location_id,
       coalesce((SELECT p.cap FROM preorders p
                  WHERE (p.shop_id, p.inventory_item_id, p.location_id) = (k.shop_id, k.inventory_item_id, k.location_id)), 0)::bigint,
       coalesce((SELECT l.available FROM inventory_levels l
                  WHERE (l.shop_id, l.inventory_item_id, l.location_id) = (k.shop_id, k.inventory_item_id, -k.location_id)), 0)::bigint,
       coalesce((SELECT sum(r.quantity) FROM reserved_quantities r
                  WHERE (r.shop_id, r.inventory_item_id, r.location_id) = (k.shop_id, k.inventory_item_id, -k.location_id)), 0)::bigint,
       coalesce((SELECT sum(o.units) FROM preorder_owed o
                  WHERE (o.shop_id, o.inventory_item_id, o.location_id) = (k.shop_id, k.inventory_item_id, k.location_id)), 0)::bigint
FROM keys k
ORDER BY 1, 2, 3
