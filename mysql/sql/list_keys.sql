-- A shop's keys by activity: the most units in active holds first, then the
-- most recently changed stock, then key order. An operator's view, not the
-- request path.
-- ? shop twice, ? rows.
SELECT l.inventory_item_id, l.location_id
FROM inventory_levels l
LEFT JOIN (
    SELECT inventory_item_id, location_id, SUM(quantity) AS held
    FROM reserved_quantities
    WHERE shop_id = ?
    GROUP BY inventory_item_id, location_id
) r ON r.inventory_item_id = l.inventory_item_id AND r.location_id = l.location_id
WHERE l.shop_id = ?
ORDER BY COALESCE(r.held, 0) DESC, l.updated_at DESC, l.inventory_item_id, l.location_id
LIMIT ?
