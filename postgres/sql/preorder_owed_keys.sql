-- Keys with owed pre-orders and sellable stock (available - safety -
-- held > 0): the conversion pass's work. $1 limit.
SELECT o.shop_id, o.inventory_item_id, o.location_id
FROM (SELECT DISTINCT shop_id, inventory_item_id, location_id FROM preorder_owed) o
JOIN inventory_levels l USING (shop_id, inventory_item_id, location_id)
-- a shop being moved here or away is not this pod's to convert
WHERE NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = o.shop_id)
  AND l.available - l.safety > coalesce((SELECT sum(h.held) FROM held_counts h
        WHERE (h.shop_id, h.inventory_item_id, h.location_id) = (o.shop_id, o.inventory_item_id, o.location_id)), 0)
LIMIT $1::int
