-- One page of keys after the cursor, in key order, each with whether its
-- buffer should grow: pool keys below the low-water mark of their cap,
-- counter keys with unallocated stock. Reads without locks; the refill
-- recomputes under the key's lock.
-- ? low-water percent, ? default strategy, ? default pool cap, ? shop,
-- ? item, ? location (the cursor), ? page size.
SELECT s.shop_id, s.inventory_item_id, s.location_id,
       s.available - s.held - s.pooled > 0
       AND (s.strategy <> 'pool' OR s.pooled * 100 < s.cap * ?)
FROM (
    SELECT l.shop_id, l.inventory_item_id, l.location_id, l.available - l.safety AS available,
           COALESCE(l.strategy, ?) AS strategy,
           COALESCE(l.pool_cap, ?) AS cap,
           COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                     WHERE r.shop_id = l.shop_id AND r.inventory_item_id = l.inventory_item_id
                       AND r.location_id = l.location_id), 0) AS held,
           (SELECT COUNT(*) FROM reservation_units u
             WHERE u.shop_id = l.shop_id AND u.inventory_item_id = l.inventory_item_id
               AND u.location_id = l.location_id)
         + COALESCE((SELECT c.units FROM inventory_counters c
                     WHERE c.shop_id = l.shop_id AND c.inventory_item_id = l.inventory_item_id
                       AND c.location_id = l.location_id), 0) AS pooled
    FROM inventory_levels l
    WHERE (l.shop_id, l.inventory_item_id, l.location_id) > (?, ?, ?)
    ORDER BY l.shop_id, l.inventory_item_id, l.location_id
    LIMIT ?
) s
ORDER BY s.shop_id, s.inventory_item_id, s.location_id
