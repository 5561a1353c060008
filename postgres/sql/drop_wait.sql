-- An entrant waits, with no queued line until the draw (so no waitlist
-- pass serves it before). No row: the checkout waits (or waited) already.
-- $1 shop, $2 checkout, $3 lines json, $4 short json, $5 hold TTL µs, $6
-- wait until, $7 now (NULL: database clock), $8 buyer hash.
INSERT INTO waiters (shop_id, checkout_id, lines, short, ttl_us, status, created_at, wait_until, buyer_hash)
VALUES ($1::bigint, $2::uuid, $3::jsonb, $4::jsonb, $5::bigint, 'waiting',
        coalesce($7::timestamptz, clock_timestamp()), $6::timestamptz, $8::bytea)
ON CONFLICT (shop_id, checkout_id) DO NOTHING
RETURNING seq
