-- Purge a batch of stock change records older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
WITH b AS (
    SELECT shop_id, change_id FROM stock_changes
    WHERE created_at < coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond'
    ORDER BY created_at
    LIMIT $3::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM stock_changes s USING b
WHERE s.shop_id = b.shop_id AND s.change_id = b.change_id
