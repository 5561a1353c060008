-- Lease up to $2 endpoints that are due (not leased by a live deliverer,
-- not waiting for a backoff), so one deliverer at a time works on each,
-- across processes. $1 lease µs, $2 how many.
UPDATE webhook_endpoints e
SET leased_until = clock_timestamp() + $1::bigint * interval '1 microsecond'
FROM (
    SELECT id FROM webhook_endpoints
    WHERE (leased_until IS NULL OR leased_until < clock_timestamp())
      AND (next_at IS NULL OR next_at <= clock_timestamp())
    ORDER BY coalesce(next_at, created_at), id
    LIMIT $2::int
    FOR UPDATE SKIP LOCKED
) due
WHERE e.id = due.id
RETURNING e.id, e.shop_id, e.url, e.secret, e.cursor, e.attempts, e.first_failed_at
