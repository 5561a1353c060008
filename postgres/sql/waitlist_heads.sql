-- The waiters at the front of the given keys' queues, oldest first: for
-- each key its oldest waiter still within its wait, if that waiter is also
-- the oldest such on every other key it waits on (head of line per key).
-- Waits past their deadline block nobody (the server ends them).
-- $1 shops, $2 items, $3 locations, $4 now (NULL: database clock).
WITH t AS (
    SELECT coalesce($4::timestamptz, clock_timestamp()) AS now
), f AS (
    SELECT DISTINCT h.shop_id, h.checkout_id
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(shop, item, loc)
    CROSS JOIN t
    CROSS JOIN LATERAL (
        SELECT l.shop_id, l.checkout_id
        FROM waiter_lines l
        JOIN waiters w ON w.shop_id = l.shop_id AND w.checkout_id = l.checkout_id
        WHERE l.shop_id = k.shop AND l.inventory_item_id = k.item AND l.location_id = k.loc
          AND w.wait_until > t.now
        ORDER BY l.seq
        LIMIT 1) h
)
SELECT w.shop_id, w.checkout_id, w.seq, w.lines, w.ttl_us, w.buyer_hash
FROM f
JOIN waiters w ON w.shop_id = f.shop_id AND w.checkout_id = f.checkout_id
CROSS JOIN t
WHERE w.status = 'waiting' AND w.wait_until > t.now
  AND NOT EXISTS (
      SELECT 1
      FROM waiter_lines m
      JOIN waiter_lines o
        ON o.shop_id = m.shop_id AND o.inventory_item_id = m.inventory_item_id
       AND o.location_id = m.location_id AND o.seq < m.seq
      JOIN waiters ow ON ow.shop_id = o.shop_id AND ow.checkout_id = o.checkout_id
      WHERE m.shop_id = w.shop_id AND m.checkout_id = w.checkout_id
        AND ow.wait_until > t.now)
ORDER BY w.seq
