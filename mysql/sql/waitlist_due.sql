-- A batch of waits that ran out. ? now (NULL: the database clock), ? limit.
SELECT shop_id, checkout_id, cart FROM waiters
WHERE status = 'waiting' AND wait_until <= COALESCE(?, UTC_TIMESTAMP(6))
ORDER BY wait_until
LIMIT ?
