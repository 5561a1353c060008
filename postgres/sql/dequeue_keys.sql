-- Take a batch of queued keys off the replenish queue, oldest first, in a
-- short transaction of its own (the refill follows in another). SKIP LOCKED
-- lets replicas share the queue. $1 batch size.
WITH b AS (
    SELECT shop_id, inventory_item_id, location_id
    FROM replenish_queue
    ORDER BY queued_at
    LIMIT $1::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM replenish_queue q USING b
WHERE q.shop_id = b.shop_id AND q.inventory_item_id = b.inventory_item_id AND q.location_id = b.location_id
RETURNING q.shop_id, q.inventory_item_id, q.location_id
