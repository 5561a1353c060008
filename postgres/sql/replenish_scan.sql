-- Keys, after a cursor in key order, whose buffer can and should grow: pool
-- keys below the low-water mark, counter and slotted keys with any
-- unallocated stock. A read without locks: the refill rechecks under the lock.
-- $1..$3 cursor, $4 batch size, $5 default strategy, $6 default pool cap,
-- $7 low-water percent.
WITH page AS (
    SELECT shop_id, inventory_item_id, location_id, available - safety AS available,
           coalesce(strategy, $5::text) AS strategy,
           coalesce(pool_cap, $6::int) AS cap
    FROM inventory_levels
    WHERE (shop_id, inventory_item_id, location_id) > ($1::bigint, $2::bigint, $3::bigint)
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = inventory_levels.shop_id)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(inventory_levels.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
    ORDER BY shop_id, inventory_item_id, location_id
    LIMIT $4::int
), st AS (
    SELECT p.*,
           (SELECT coalesce(sum(r.held), 0) FROM held_counts r
             WHERE r.shop_id = p.shop_id AND r.inventory_item_id = p.inventory_item_id
               AND r.location_id = p.location_id) AS held,
           (SELECT count(*) FROM reservation_units u
             WHERE u.shop_id = p.shop_id AND u.inventory_item_id = p.inventory_item_id
               AND u.location_id = p.location_id)
         + (SELECT coalesce(sum(c.units), 0) FROM inventory_counters c
             WHERE c.shop_id = p.shop_id AND c.inventory_item_id = p.inventory_item_id
               AND c.location_id = p.location_id) AS pooled
    FROM page p
)
SELECT shop_id, inventory_item_id, location_id,
       available - held - pooled > 0
       AND (strategy <> 'pool' OR pooled * 100 < cap::bigint * $7::int) AS wanted
FROM st
ORDER BY shop_id, inventory_item_id, location_id
