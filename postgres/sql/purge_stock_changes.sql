-- Purge a batch of stock change records older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
-- The cutoff is a scalar subquery, evaluated once (an InitPlan), so that it
-- bounds the index scan: clock_timestamp() is volatile, and compared directly
-- it is a filter applied to every row of the index: each call would read
-- every stock change record.
WITH b AS (
    SELECT shop_id, change_id FROM stock_changes
    WHERE NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = stock_changes.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(stock_changes.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
      AND created_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond')
    ORDER BY created_at
    LIMIT $3::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM stock_changes s USING b
WHERE s.shop_id = b.shop_id AND s.change_id = b.change_id
