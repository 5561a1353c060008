-- A shop's keys by activity: the most units in active holds first, then the
-- most recently changed stock, then key order. Reads the shop's levels and
-- its held lines (idx_reserved_scope, index-only); an operator's view, not
-- the request path.
-- $1 shop, $2 rows.
SELECT l.inventory_item_id, l.location_id
FROM inventory_levels l
LEFT JOIN (
    SELECT inventory_item_id, location_id, sum(quantity) AS held
    FROM reserved_quantities
    WHERE shop_id = $1::bigint
    GROUP BY inventory_item_id, location_id
) r USING (inventory_item_id, location_id)
WHERE l.shop_id = $1::bigint
ORDER BY coalesce(r.held, 0) DESC, l.updated_at DESC, l.inventory_item_id, l.location_id
LIMIT $2::int
