-- The queue, oldest first: waiting checkouts still within their wait.
-- $1 now (NULL: database clock), $2 limit.
SELECT shop_id, checkout_id, seq, lines, ttl_us
FROM waiters
WHERE status = 'waiting' AND wait_until > coalesce($1::timestamptz, clock_timestamp())
ORDER BY seq
LIMIT $2::int
