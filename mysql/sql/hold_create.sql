-- Create a hold. A duplicate key (ER_DUP_ENTRY) means the checkout exists:
-- the caller answers a replay or a conflict. ? shop, ? checkout, ? lines,
-- ? ttl µs, ? lifetime µs, ? now (NULL: the database clock), ? shop,
-- ? checkout. No row inserted (and no error): the checkout waits, or waited
-- and its wait ended without a hold (waitlist.go) — the wait answers it.
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline)
SELECT ?, ?, 'held', ?, t.now, t.now + INTERVAL ? MICROSECOND, t.now + INTERVAL ? MICROSECOND
FROM (SELECT COALESCE(?, UTC_TIMESTAMP(6)) AS now) t
WHERE NOT EXISTS (SELECT 1 FROM waiters w WHERE w.shop_id = ? AND w.checkout_id = ? AND w.status <> 'held')
