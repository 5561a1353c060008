-- Take a batch of queued keys off the replenish queue, oldest first, in a
-- short transaction of its own (the refill follows in another). SKIP LOCKED
-- lets replicas share the queue. $1 batch size.
WITH b AS (
    SELECT shop_id, inventory_item_id, location_id
    FROM replenish_queue
    -- A shop being moved here or away is not this pod's to refill.
    WHERE NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = replenish_queue.shop_id)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(replenish_queue.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
    ORDER BY queued_at
    LIMIT $1::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM replenish_queue q USING b
WHERE q.shop_id = b.shop_id AND q.inventory_item_id = b.inventory_item_id AND q.location_id = b.location_id
RETURNING q.shop_id, q.inventory_item_id, q.location_id
