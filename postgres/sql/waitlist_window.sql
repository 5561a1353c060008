-- The next keys with waiters after a cursor, in key order: the window of
-- one pass of the waitlist server (round robin over every key with
-- waiters, whatever its shop). A loose index scan of waiter_lines' primary
-- key: one probe per key, however many wait on it.
-- $1 shop, $2 item, $3 location of the cursor (0, 0, 0: from the start),
-- $4 limit.
WITH RECURSIVE k AS (
    (SELECT shop_id, inventory_item_id, location_id FROM waiter_lines
     WHERE (shop_id, inventory_item_id, location_id) > ($1::bigint, $2::bigint, $3::bigint)
     ORDER BY shop_id, inventory_item_id, location_id
     LIMIT 1)
    UNION ALL
    SELECT n.shop_id, n.inventory_item_id, n.location_id
    FROM k, LATERAL (
        SELECT w.shop_id, w.inventory_item_id, w.location_id FROM waiter_lines w
        WHERE (w.shop_id, w.inventory_item_id, w.location_id) > (k.shop_id, k.inventory_item_id, k.location_id)
        ORDER BY w.shop_id, w.inventory_item_id, w.location_id
        LIMIT 1) n
)
SELECT shop_id, inventory_item_id, location_id FROM k
-- A shop arriving or gone (a move, migration 15) is served by the pod that
-- has it; a shop a move is copying (its lock held exclusively: the guard
-- would refuse the whole pass) waits for the fence's end. The shared lock
-- is the guard's own, as in sweep_expire.sql.
WHERE NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = k.shop_id)
  AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(k.shop_id::text))
LIMIT $4::int
