-- A checkout's waiters row, and its place in the queue: 1 + the waiting
-- carts of the shop ahead of it (lower seq) that share a key with it.
-- lapsed: waiting but past its wait (the server expires it on its next
-- pass and never grants it). $1 shop, $2 checkout, $3 now (NULL: database
-- clock).
SELECT w.status, w.lines, w.short, w.wait_until,
       w.status = 'waiting' AND w.wait_until <= coalesce($3::timestamptz, clock_timestamp()),
       CASE WHEN w.status <> 'waiting' THEN 0
            -- A drop's entrant before the draw has no place yet.
            WHEN NOT EXISTS (SELECT 1 FROM waiter_lines l
                             WHERE l.shop_id = w.shop_id AND l.checkout_id = w.checkout_id) THEN 0
            ELSE 1 + (
           SELECT count(*) FROM waiters o
           WHERE o.status = 'waiting' AND o.shop_id = w.shop_id AND o.seq < w.seq
             AND EXISTS (SELECT 1
                         FROM jsonb_to_recordset(o.lines) a(item_id bigint, location_id bigint),
                              jsonb_to_recordset(w.lines) b(item_id bigint, location_id bigint)
                         WHERE a.item_id = b.item_id AND a.location_id = b.location_id))
       END::int
FROM waiters w
WHERE w.shop_id = $1::bigint AND w.checkout_id = $2::uuid
