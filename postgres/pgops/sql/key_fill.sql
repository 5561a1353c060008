-- The keys with the most units in active holds, with their stock and
-- buffer. Starts from the active holds (reserved_quantities, read through
-- its covering index) so it never aggregates the whole pool. $1 default
-- strategy, $2 default pool cap, $3 bounds the rows.
WITH hot AS (
    SELECT shop_id, inventory_item_id, location_id, sum(quantity) AS held
    FROM reserved_quantities
    GROUP BY 1, 2, 3
    ORDER BY 4 DESC, 1, 2, 3
    LIMIT $3::int
)
SELECT h.shop_id, h.inventory_item_id, h.location_id,
       coalesce(l.strategy, $1::text),
       coalesce(l.pool_cap, $2::int),
       coalesce(l.available, 0)::bigint,
       h.held::bigint,
       ((SELECT count(*) FROM reservation_units u
          WHERE u.shop_id = h.shop_id AND u.inventory_item_id = h.inventory_item_id
            AND u.location_id = h.location_id)
      + (SELECT coalesce(sum(c.units), 0) FROM inventory_counters c
          WHERE c.shop_id = h.shop_id AND c.inventory_item_id = h.inventory_item_id
            AND c.location_id = h.location_id))::bigint
FROM hot h
LEFT JOIN inventory_levels l USING (shop_id, inventory_item_id, location_id)
ORDER BY h.held DESC, h.shop_id, h.inventory_item_id, h.location_id
