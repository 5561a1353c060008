-- Create a checkout's hold row — the first thing a reservation writes, so
-- that a concurrent retry of the same checkout waits here, on the hold's
-- key, before it touches any buffer (lock order: holds first). Creates
-- nothing (no row returned) when the shop's checkout already has a hold or
-- an outcome; after waiting for an uncommitted one, it sees what it became.
-- The lines follow (hold_lines_create.sql) once the units are taken; a
-- sold-out answer rolls the row back.
-- The checkout's in-flight lock (shared, two-int space, class 1752132719,
-- held to commit) tells the sold-out hint (sold_out.sql) that this
-- checkout's hold may be committing: a retry then takes this path and waits
-- here for it, rather than be told sold out (issue #10 item 4).
-- Nor while the checkout waits, or waited and its wait ended without a
-- hold (waitlist.go): the wait answers it (issue 24 item 5).
-- $1 checkout, $2 shop, $3 lines json, $4 ttl µs, $5 lifetime µs,
-- $6 now (NULL: database clock), $7 strict: creating nothing raises HF010
-- (holdfast_refuse, migration 27) instead of returning no row, so that a
-- pipeline's later statements do not run (reserve.go, reserveTxPipelined).
WITH h AS (
    INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
    SELECT $1::uuid, $2::bigint, 'held', $3::jsonb, t.now,
           t.now + $4::bigint * interval '1 microsecond',
           t.now + $5::bigint * interval '1 microsecond'
    FROM (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) t,
         LATERAL (SELECT pg_advisory_xact_lock_shared(1752132719, hashtext($1::uuid::text))) inflight
    WHERE NOT EXISTS (SELECT 1 FROM waiters w
                      WHERE w.shop_id = $2::bigint AND w.checkout_id = $1::uuid AND w.status <> 'held')
    ON CONFLICT (shop_id, checkout_id) DO NOTHING
    RETURNING created_at, expires_at, deadline
)
SELECT created_at, expires_at, deadline FROM h
UNION ALL
-- CASE, not AND: the refusal runs only once the insert is known empty.
SELECT NULL, NULL, NULL
WHERE CASE WHEN $7::boolean AND NOT EXISTS (SELECT 1 FROM h) THEN holdfast_refuse('the checkout has a hold, an outcome or a wait') = 0 ELSE false END
