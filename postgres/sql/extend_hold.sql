-- Move a held checkout's expiry to now + ttl, never past its deadline.
-- $1 checkout, $2 shop, $3 ttl µs, $4 now.
UPDATE holds
SET expires_at = t.now + $3::bigint * interval '1 microsecond'
FROM (SELECT coalesce($4::timestamptz, clock_timestamp()) AS now) t
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
  AND t.now + $3::bigint * interval '1 microsecond' <= deadline
RETURNING lines, created_at, expires_at, deadline, revision
