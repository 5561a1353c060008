-- Remove the lines of expired holds; returns the keys they held units of.
-- $1 checkouts.
WITH d AS (
    DELETE FROM reserved_quantities WHERE checkout_id = ANY($1::uuid[])
    RETURNING shop_id, inventory_item_id, location_id
)
SELECT DISTINCT shop_id, inventory_item_id, location_id FROM d
ORDER BY 1, 2, 3
