-- Units held, units oversold, keys whose holds do not add up to reserved.
WITH h AS (
    SELECT shop_id, inventory_item_id, location_id, sum(quantity) AS held
    FROM bench_opt_holds
    GROUP BY 1, 2, 3
)
SELECT coalesce(sum(i.reserved), 0)::bigint,
       coalesce(sum(greatest(0, i.reserved - i.stock)), 0)::bigint,
       count(*) FILTER (WHERE coalesce(h.held, 0) <> i.reserved)::bigint
FROM bench_opt_items i
LEFT JOIN h USING (shop_id, inventory_item_id, location_id)
