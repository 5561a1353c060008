-- Keys with a safety stock: how many, the units held back, and how many are
-- at it (available - held <= safety) or below it (available - held <
-- safety).
SELECT COUNT(*),
       COALESCE(SUM(s.safety), 0),
       COALESCE(SUM(s.available - s.held <= s.safety), 0),
       COALESCE(SUM(s.available - s.held < s.safety), 0)
FROM (
    SELECT l.available, l.safety,
           COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                     WHERE r.shop_id = l.shop_id AND r.inventory_item_id = l.inventory_item_id
                       AND r.location_id = l.location_id), 0) AS held
    FROM inventory_levels l
    WHERE l.safety > 0
) s
