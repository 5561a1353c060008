-- Keys whose held_counts (migration 011) differ from the sum of their
-- lines; each row is a defect. Refills and sold-out checks read the counts.
WITH lines AS (
    SELECT shop_id, inventory_item_id, location_id, sum(quantity)::bigint AS held
    FROM reserved_quantities GROUP BY 1, 2, 3
), counts AS (
    SELECT shop_id, inventory_item_id, location_id, sum(held)::bigint AS held
    FROM held_counts GROUP BY 1, 2, 3
)
SELECT shop_id, inventory_item_id, location_id, coalesce(l.held, 0), coalesce(c.held, 0)
FROM lines l FULL JOIN counts c USING (shop_id, inventory_item_id, location_id)
WHERE coalesce(l.held, 0) <> coalesce(c.held, 0)
ORDER BY 1, 2, 3
