-- Purge a batch of ended waits older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
WITH b AS (
    SELECT shop_id, checkout_id FROM waiters
    WHERE status <> 'waiting'
      AND ended_at < coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond'
    ORDER BY ended_at
    LIMIT $3::int
)
DELETE FROM waiters w USING b
WHERE w.shop_id = b.shop_id AND w.checkout_id = b.checkout_id AND w.status <> 'waiting'
