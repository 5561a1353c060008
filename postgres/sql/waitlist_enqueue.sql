-- Put a checkout in the queue, under the advisory locks of its cart's keys
-- (so seq orders the enqueues of each key as they took its lock). No row:
-- the checkout already waits (or waited). $1 shop, $2 checkout, $3 lines
-- json, $4 short lines json, $5 hold TTL µs, $6 wait µs, $7 now (NULL:
-- database clock), $8 buyer hash (NULL: none; copied onto the granted hold).
INSERT INTO waiters (shop_id, checkout_id, lines, short, ttl_us, status, created_at, wait_until, buyer_hash)
SELECT $1::bigint, $2::uuid, $3::jsonb, $4::jsonb, $5::bigint, 'waiting', t.now,
       t.now + $6::bigint * interval '1 microsecond', $8::bytea
FROM (SELECT coalesce($7::timestamptz, clock_timestamp()) AS now) t
ON CONFLICT (shop_id, checkout_id) DO NOTHING
RETURNING seq
