-- An entrant waits, with no queued line until the draw (so no waitlist
-- pass serves it before). ER_DUP_ENTRY: the checkout waits (or waited)
-- already. ? shop, ? checkout, ? cart, ? short, ? hold TTL µs, ? now (NULL:
-- the database's), ? wait until.
INSERT INTO waiters (shop_id, checkout_id, cart, short, ttl_us, status, created_at, wait_until)
VALUES (?, ?, ?, ?, ?, 'waiting', COALESCE(?, UTC_TIMESTAMP(6)), ?)
