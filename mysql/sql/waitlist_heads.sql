-- The waiters at the front of the given keys' queues, oldest first: for
-- each key its oldest waiter still within its wait, if that waiter is also
-- the oldest such on every other key it waits on (head of line per key).
-- Waits past their deadline block nobody (the server ends them).
-- ? now, ? keys JSON [[shop, item, location], …], ? now, ? now (NULL: the
-- database clock).
SELECT w.shop_id, w.checkout_id, w.seq, w.cart, w.ttl_us, w.buyer_hash
FROM waiters w
WHERE w.status = 'waiting' AND w.wait_until > COALESCE(?, UTC_TIMESTAMP(6))
  AND (w.shop_id, w.checkout_id) IN (
      SELECT h.shop_id, h.checkout_id
      FROM (SELECT l.shop_id, l.inventory_item_id, l.location_id, MIN(l.seq) AS seq
            FROM JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$[0]', item BIGINT PATH '$[1]', loc BIGINT PATH '$[2]')) j
            STRAIGHT_JOIN waiter_lines l
                    ON l.shop_id = j.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
            JOIN waiters x ON x.shop_id = l.shop_id AND x.checkout_id = l.checkout_id
            WHERE x.wait_until > COALESCE(?, UTC_TIMESTAMP(6))
            GROUP BY l.shop_id, l.inventory_item_id, l.location_id) f
      JOIN waiter_lines h
        ON h.shop_id = f.shop_id AND h.inventory_item_id = f.inventory_item_id
       AND h.location_id = f.location_id AND h.seq = f.seq)
  AND NOT EXISTS (
      SELECT 1
      FROM waiter_lines m
      JOIN waiter_lines o
        ON o.shop_id = m.shop_id AND o.inventory_item_id = m.inventory_item_id
       AND o.location_id = m.location_id AND o.seq < m.seq
      JOIN waiters ow ON ow.shop_id = o.shop_id AND ow.checkout_id = o.checkout_id
      WHERE m.shop_id = w.shop_id AND m.checkout_id = w.checkout_id
        AND ow.wait_until > COALESCE(?, UTC_TIMESTAMP(6)))
ORDER BY w.seq
