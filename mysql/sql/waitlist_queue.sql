-- The queue, oldest first: waiting checkouts still within their wait.
-- ? now (NULL: the database clock), ? limit.
SELECT shop_id, checkout_id, seq, cart, ttl_us FROM waiters
WHERE status = 'waiting' AND wait_until > COALESCE(?, UTC_TIMESTAMP(6))
ORDER BY seq
LIMIT ?
