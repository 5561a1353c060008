-- Lease up to $2 endpoints that are due, oldest due first, so one
-- deliverer at a time works on each, across processes. Due: behind its
-- shop's last sequenced cursor (it has events to deliver), not leased by a
-- live deliverer, not waiting for a backoff. next_at is when the endpoint
-- became due (unlease.sql puts a served endpoint at the back of the line;
-- failed.sql puts it after its backoff), so every endpoint with events is
-- served in turn, whatever their number: round robin over the due ones.
-- The subquery on holdfast_event_shops is not locked (FOR UPDATE applies
-- to the FROM list). Each lease gets a new token (lease_token): the
-- deliverer's writes are fenced by it. $1 lease µs, $2 how many.
UPDATE webhook_endpoints e
SET leased_until = clock_timestamp() + $1::bigint * interval '1 microsecond',
    lease_token = e.lease_token + 1
FROM (
    SELECT w.shop_id, w.id FROM webhook_endpoints w
    WHERE w.cursor < (SELECT s.last_seq FROM holdfast_event_shops s WHERE s.shop_id = w.shop_id)
      AND (w.leased_until IS NULL OR w.leased_until < clock_timestamp())
      AND coalesce(w.next_at, w.created_at) <= clock_timestamp()
      -- a shop being moved here or away is not this pod's to deliver
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = w.shop_id)
    ORDER BY coalesce(w.next_at, w.created_at), w.id
    LIMIT $2::int
    FOR UPDATE SKIP LOCKED
) due
WHERE e.shop_id = due.shop_id AND e.id = due.id
RETURNING e.id, e.shop_id, e.url, e.secret, e.cursor, e.attempts, e.first_failed_at, e.lease_token
