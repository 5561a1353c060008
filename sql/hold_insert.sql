-- Start a hold for a checkout. Does nothing when the checkout already has a
-- hold or an outcome; a concurrent insert of the same checkout waits here for
-- the other transaction to finish, so two retries never both take units.
-- $1 checkout, $2 shop, $3 lines, $4 ttl µs, $5 lifetime µs, $6 now (NULL: database clock)
INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
SELECT $1::uuid, $2::bigint, 'held', $3::jsonb, t.now,
       t.now + $4::bigint * interval '1 microsecond',
       t.now + $5::bigint * interval '1 microsecond'
FROM (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) t
ON CONFLICT (checkout_id) DO NOTHING
RETURNING created_at, expires_at, deadline
