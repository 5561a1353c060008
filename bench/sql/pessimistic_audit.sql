-- Units held, units oversold (reserved beyond stock), and keys whose ledger
-- does not add up to reserved_stock.
WITH l AS (
    SELECT shop_id, inventory_item_id, location_id, -sum(quantity) AS reserved
    FROM bench_pessimistic_ledger
    WHERE type = 'RESERVATION'
    GROUP BY 1, 2, 3
)
SELECT coalesce(sum(i.reserved_stock), 0)::bigint,
       coalesce(sum(greatest(0, i.reserved_stock - i.stock)), 0)::bigint,
       count(*) FILTER (WHERE coalesce(l.reserved, 0) <> i.reserved_stock OR i.reserved_stock < 0)::bigint
FROM bench_pessimistic_items i
LEFT JOIN l USING (shop_id, inventory_item_id, location_id)
