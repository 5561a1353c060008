-- The keys at or below their safety stock, tightest first. $1 how many.
SELECT s.shop_id, s.inventory_item_id, s.location_id, s.available, s.safety, s.held
FROM (
    SELECT l.shop_id, l.inventory_item_id, l.location_id, l.available, l.safety,
           (SELECT coalesce(sum(r.quantity), 0) FROM reserved_quantities r
             WHERE r.shop_id = l.shop_id AND r.inventory_item_id = l.inventory_item_id
               AND r.location_id = l.location_id)::int AS held
    FROM inventory_levels l
    WHERE l.safety > 0
) s
WHERE s.available - s.held <= s.safety
ORDER BY s.available - s.held - s.safety, s.shop_id, s.inventory_item_id, s.location_id
LIMIT $1
