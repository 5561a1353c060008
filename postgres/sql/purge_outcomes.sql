-- Purge a batch of outcome records older than the retention window.
-- $1 now, $2 retention µs, $3 batch size.
-- The cutoff is a scalar subquery, evaluated once (an InitPlan), so that it
-- bounds the index scan: clock_timestamp() is volatile, and compared directly
-- it is a filter applied to every row of the index: each call would read
-- every ended outcome.
WITH b AS (
    SELECT shop_id, checkout_id FROM holds
    WHERE status <> 'held'
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holds.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(holds.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
      AND ended_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond')
    ORDER BY ended_at
    LIMIT $3::int
    FOR UPDATE SKIP LOCKED
)
-- b's rows are locked, and were outcomes when locked (FOR UPDATE rechecks
-- the condition on the row's latest version), so none is held when the
-- DELETE runs: it joins on the key alone. Given a status condition of its
-- own, the planner could read b's rows through holds_ended, every ended
-- outcome, each call (it did, with statistics taken before outcomes ended).
DELETE FROM holds h USING b
WHERE h.shop_id = b.shop_id AND h.checkout_id = b.checkout_id
