-- Purge a batch of ended waits older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
-- The cutoff is a scalar subquery, evaluated once (an InitPlan), so that it
-- bounds the index scan: clock_timestamp() is volatile, and compared directly
-- it is a filter applied to every row of the index: each call would read
-- every ended wait.
WITH b AS (
    SELECT shop_id, checkout_id FROM waiters
    WHERE status <> 'waiting'
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = waiters.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(waiters.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
      AND ended_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond')
    ORDER BY ended_at
    LIMIT $3::int
)
DELETE FROM waiters w USING b
WHERE w.shop_id = b.shop_id AND w.checkout_id = b.checkout_id AND w.status <> 'waiting'
