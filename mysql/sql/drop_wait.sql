-- An entrant waits, with no queued line until the draw (so no waitlist
-- pass serves it before). ER_DUP_ENTRY: the checkout waits (or waited)
-- already. ? shop, ? checkout, ? cart, ? short, ? hold TTL µs, ? now (NULL:
-- the database's), ? wait until, ? buyer hash.
INSERT INTO waiters (shop_id, checkout_id, cart, short, ttl_us, status, created_at, wait_until, buyer_hash)
VALUES (?, ?, ?, ?, ?, 'waiting', COALESCE(?, UTC_TIMESTAMP(6)), ?, ?)
