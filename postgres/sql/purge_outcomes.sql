-- Purge a batch of outcome records older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
WITH b AS (
    SELECT shop_id, checkout_id FROM holds
    WHERE status <> 'held'
      AND ended_at < coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond'
    ORDER BY ended_at
    LIMIT $3::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM holds h USING b
WHERE h.shop_id = b.shop_id AND h.checkout_id = b.checkout_id AND h.status <> 'held'
