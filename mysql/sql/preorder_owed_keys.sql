-- Keys with owed pre-orders and sellable stock (available - safety -
-- held > 0): the conversion pass's work. ? limit.
SELECT o.shop_id, o.inventory_item_id, o.location_id
FROM (SELECT DISTINCT shop_id, inventory_item_id, location_id FROM preorder_owed) o
JOIN inventory_levels l ON l.shop_id = o.shop_id AND l.inventory_item_id = o.inventory_item_id AND l.location_id = o.location_id
-- a shop being moved here or away is not this pod's to convert
WHERE NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = o.shop_id)
  AND l.available - l.safety > COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
        WHERE r.shop_id = o.shop_id AND r.inventory_item_id = o.inventory_item_id AND r.location_id = o.location_id), 0)
LIMIT ?
