-- A merge's absent destination: created holding the source's lines, with
-- the source's expiry, deadline and buyer. A duplicate key (ER_DUP_ENTRY)
-- or no row (the checkout waits): the attempt is retried and sees it.
-- ? checkout, ? lines json, ? now (NULL: database clock), ? shop,
-- ? source checkout, ? shop, ? checkout.
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline, buyer_hash)
SELECT s.shop_id, ?, 'held', ?, COALESCE(?, UTC_TIMESTAMP(6)), s.expires_at, s.deadline, s.buyer_hash
FROM holds s
WHERE s.shop_id = ? AND s.checkout_id = ?
  AND NOT EXISTS (SELECT 1 FROM waiters w WHERE w.shop_id = ? AND w.checkout_id = ? AND w.status <> 'held')
