-- Keys with owed pre-orders and sellable stock (available - safety -
-- held > 0): the conversion pass's work. $1 limit.
SELECT o.shop_id, o.inventory_item_id, o.location_id
FROM (SELECT DISTINCT shop_id, inventory_item_id, location_id FROM preorder_owed) o
JOIN inventory_levels l USING (shop_id, inventory_item_id, location_id)
WHERE l.available - l.safety > coalesce((SELECT sum(h.held) FROM held_counts h
        WHERE (h.shop_id, h.inventory_item_id, h.location_id) = (o.shop_id, o.inventory_item_id, o.location_id)), 0)
LIMIT $1::int
