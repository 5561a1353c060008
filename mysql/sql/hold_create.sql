-- Create a hold. A duplicate key (ER_DUP_ENTRY) means the checkout exists:
-- the caller answers a replay or a conflict. ? shop, ? checkout, ? lines,
-- ? ttl µs, ? lifetime µs, ? now (NULL: the database clock).
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline)
SELECT ?, ?, 'held', ?, t.now, t.now + INTERVAL ? MICROSECOND, t.now + INTERVAL ? MICROSECOND
FROM (SELECT COALESCE(?, UTC_TIMESTAMP(6)) AS now) t
