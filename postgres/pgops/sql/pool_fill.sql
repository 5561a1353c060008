-- Pool-strategy keys: how many, how many below the low-water mark while
-- stock is left to buffer, how many empty while stock is left, and the
-- least-filled of them. $1 default strategy, $2 default pool cap, $3
-- low-water percent, $4 bounds the listed keys.
WITH u AS (
    SELECT shop_id, inventory_item_id, location_id, count(*) AS n
    FROM reservation_units GROUP BY 1, 2, 3
), r AS (
    SELECT shop_id, inventory_item_id, location_id, sum(quantity) AS n
    FROM reserved_quantities GROUP BY 1, 2, 3
), k AS (
    SELECT l.shop_id, l.inventory_item_id, l.location_id,
           coalesce(l.pool_cap, $2::int)::bigint AS cap,
           l.available::bigint AS available,
           coalesce(r.n, 0)::bigint AS held,
           coalesce(u.n, 0)::bigint AS pooled
    FROM inventory_levels l
    LEFT JOIN u USING (shop_id, inventory_item_id, location_id)
    LEFT JOIN r USING (shop_id, inventory_item_id, location_id)
    WHERE coalesce(l.strategy, $1::text) = 'pool'
), low AS (
    SELECT * FROM k
    WHERE available - held - pooled > 0 AND pooled * 100 < cap * $3::int
)
SELECT (SELECT count(*) FROM k)::int,
       (SELECT count(*) FROM low)::int,
       (SELECT count(*) FROM low WHERE pooled = 0)::int,
       (SELECT coalesce(sum(pooled), 0) FROM k)::bigint,
       (SELECT coalesce(sum(least(cap, greatest(available - held, 0))), 0) FROM k)::bigint,
       coalesce((SELECT array_agg(ARRAY[shop_id, inventory_item_id, location_id, cap, available, held, pooled]
                                  ORDER BY pooled::float8 / cap, shop_id, inventory_item_id, location_id)
                 FROM (SELECT * FROM low ORDER BY pooled::float8 / cap, shop_id, inventory_item_id, location_id LIMIT $4::int) w),
                '{}')::bigint[]
