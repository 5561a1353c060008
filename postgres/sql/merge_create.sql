-- A merge's absent destination: created holding the source's lines, with
-- the source's expiry, deadline and buyer. Nothing (no row returned) when
-- the checkout got a hold meanwhile, or waits (the attempt is retried, and
-- then sees it). $1 checkout, $2 shop, $3 lines json, $4 source checkout,
-- $5 now (NULL: database clock).
INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline, buyer_hash)
SELECT $1::uuid, $2::bigint, 'held', $3::jsonb, coalesce($5::timestamptz, clock_timestamp()),
       s.expires_at, s.deadline, s.buyer_hash
FROM holds s
WHERE s.checkout_id = $4::uuid AND s.shop_id = $2::bigint
  AND NOT EXISTS (SELECT 1 FROM waiters w
                  WHERE w.shop_id = $2::bigint AND w.checkout_id = $1::uuid AND w.status <> 'held')
ON CONFLICT (shop_id, checkout_id) DO NOTHING
RETURNING checkout_id
