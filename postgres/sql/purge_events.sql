-- Delete one batch of sequenced events older than the event retention
-- that every webhook endpoint of their shop has received (its cursor is at
-- or past the event; a grouped row's last, seq + n - 1: migration 28), or
-- older than the hard cap (EventRetentionMax): then the endpoint records
-- the gap as a dead letter (package webhook).
-- $1 now (NULL: database clock), $2 retention µs, $3 batch, $4 cap µs.
-- The cutoffs are scalar subqueries, evaluated once (InitPlans), so that
-- they bound the index scan: clock_timestamp() is volatile, and compared
-- directly it is a filter applied to every row of the index: each call
-- would read every sequenced event. Events an endpoint still waits for are
-- read again by each call until it receives them or the cap passes.
DELETE FROM holdfast_events
WHERE (shop_id, id) IN (
    SELECT e.shop_id, e.id FROM holdfast_events e
    WHERE e.seq IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = e.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(e.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
      AND e.created_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond')
      AND (e.created_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $4::bigint * interval '1 microsecond')
           OR NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.shop_id = e.shop_id AND w.cursor < e.seq + e.n - 1))
    ORDER BY e.created_at
    LIMIT $3::int
)
