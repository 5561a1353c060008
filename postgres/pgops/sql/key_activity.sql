-- The keys with the most units reserved or claimed between two activity
-- marks, with their stock and buffer. It reads only the rows between the
-- marks (primary-key ranges) plus the listed keys' rows. Reserved lines
-- still held count from reserved_quantities; claimed lines from the ledger
-- (a line reserved and claimed inside the window counts twice, once per
-- step). $1, $2 reserved_quantities ids after / up to; $3, $4
-- inventory_ledger ids after / up to; $5 default strategy; $6 default pool
-- cap; $7 bounds the rows.
WITH moved AS (
    SELECT shop_id, inventory_item_id, location_id, quantity::bigint AS units
    FROM reserved_quantities
    WHERE id > $1::bigint AND id <= $2::bigint
    UNION ALL
    SELECT shop_id, inventory_item_id, location_id, (-delta)::bigint
    FROM inventory_ledger
    WHERE id > $3::bigint AND id <= $4::bigint AND delta < 0 AND reason LIKE 'claim%'
), hot AS (
    SELECT shop_id, inventory_item_id, location_id, sum(units) AS units
    FROM moved
    GROUP BY 1, 2, 3
    ORDER BY 4 DESC, 1, 2, 3
    LIMIT $7::int
)
SELECT h.shop_id, h.inventory_item_id, h.location_id,
       coalesce(l.strategy, $5::text),
       coalesce(l.pool_cap, $6::int),
       coalesce(l.available, 0)::bigint,
       (SELECT coalesce(sum(r.quantity), 0) FROM reserved_quantities r
          WHERE r.shop_id = h.shop_id AND r.inventory_item_id = h.inventory_item_id
            AND r.location_id = h.location_id)::bigint,
       ((SELECT count(*) FROM reservation_units u
          WHERE u.shop_id = h.shop_id AND u.inventory_item_id = h.inventory_item_id
            AND u.location_id = h.location_id)
      + (SELECT coalesce(sum(c.units), 0) FROM inventory_counters c
          WHERE c.shop_id = h.shop_id AND c.inventory_item_id = h.inventory_item_id
            AND c.location_id = h.location_id))::bigint,
       h.units::bigint
FROM hot h
LEFT JOIN inventory_levels l USING (shop_id, inventory_item_id, location_id)
ORDER BY h.units DESC, h.shop_id, h.inventory_item_id, h.location_id
