-- Put a checkout in the queue, under its cart's key lock rows. ER_DUP_ENTRY:
-- it waits (or waited) already. ? shop, ? checkout, ? cart, ? short,
-- ? hold TTL µs, ? wait µs, ? buyer hash (NULL: none; copied onto the
-- granted hold), ? now (NULL: the database clock).
INSERT INTO waiters (shop_id, checkout_id, cart, short, ttl_us, status, created_at, wait_until, buyer_hash)
SELECT ?, ?, ?, ?, ?, 'waiting', t.now, t.now + INTERVAL ? MICROSECOND, ?
FROM (SELECT COALESCE(?, UTC_TIMESTAMP(6)) AS now) t
