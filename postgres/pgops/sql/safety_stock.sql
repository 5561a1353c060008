-- Keys with a safety stock: how many, the units held back, and how many are
-- at it (nothing left to sell: available - held <= safety) or below it
-- (available - held < safety: the reserve itself is short).
SELECT count(*)::int,
       coalesce(sum(s.safety), 0)::bigint,
       (count(*) FILTER (WHERE s.available - s.held <= s.safety))::int,
       (count(*) FILTER (WHERE s.available - s.held < s.safety))::int
FROM (
    SELECT l.available, l.safety,
           (SELECT coalesce(sum(r.quantity), 0) FROM reserved_quantities r
             WHERE r.shop_id = l.shop_id AND r.inventory_item_id = l.inventory_item_id
               AND r.location_id = l.location_id) AS held
    FROM inventory_levels l
    WHERE l.safety > 0
) s
