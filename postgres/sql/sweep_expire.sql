-- Expire a batch of holds past their expiry. SKIP LOCKED lets any number of
-- sweepers (and replicas) run at once without colliding, and skips holds a
-- claim, release or extend is deciding right now.
-- $1 now, $2 batch size.
-- The cutoff is a scalar subquery, evaluated once (an InitPlan), so that it
-- bounds the index scan: clock_timestamp() is volatile, and compared directly
-- it is a filter applied to every row of the index: once the sweeper has
-- caught up, each call would read every held hold.
WITH batch AS (
    SELECT shop_id, checkout_id
    FROM holds
    WHERE status = 'held' AND expires_at < (SELECT coalesce($1::timestamptz, clock_timestamp()))
      -- a shop arriving or gone (a move, migration 15) is not this pod's to
      -- sweep. OFFSET 0 keeps this a probe of the fences' key per expired
      -- hold (as in events_sequence.sql): as an anti-join against the
      -- never-analysed fences, which the planner expects to remove nearly
      -- every row of a table with one shop, the sweep read and sorted every
      -- expired hold for its batch (a bitmap scan and a sort: 180 ms a
      -- batch of 500 at 1.2 million expired holds in the service soak,
      -- which fell further behind every minute) instead of the first $2 of
      -- holds_expiry.
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holds.shop_id OFFSET 0)
      -- nor, for now, a shop a move is copying (the mover holds its lock
      -- exclusively; the guard would refuse the whole batch): the lock
      -- taken shared here is the one the guard takes, so a mover that
      -- comes later waits for this batch as for any write in flight
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(holds.shop_id::text))
    ORDER BY expires_at
    LIMIT $2::int
    FOR UPDATE SKIP LOCKED
)
UPDATE holds h
SET status = 'expired', ended_at = coalesce($1::timestamptz, clock_timestamp())
FROM batch b
WHERE h.shop_id = b.shop_id AND h.checkout_id = b.checkout_id
RETURNING h.shop_id, h.checkout_id
