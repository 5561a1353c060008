-- Remove the lines of expired holds; returns the keys they held units of.
-- $1 shops, $2 checkouts (pairwise).
WITH d AS (
    DELETE FROM reserved_quantities r
    USING unnest($1::bigint[], $2::uuid[]) AS x(shop_id, checkout_id)
    WHERE r.shop_id = x.shop_id AND r.checkout_id = x.checkout_id
    RETURNING r.shop_id, r.inventory_item_id, r.location_id
)
SELECT DISTINCT shop_id, inventory_item_id, location_id FROM d
ORDER BY 1, 2, 3
