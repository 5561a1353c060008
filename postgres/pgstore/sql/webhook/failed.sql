-- A delivery failed: record it and wait $4 µs before the next attempt;
-- only while $7 is the endpoint's lease token (no row: a later lease has
-- it). The lease stays: the deliverer may record a dead letter next, and
-- no other may take the endpoint in between (unlease.sql gives it back,
-- keeping the backoff). Returns whether the retry horizon ($5 µs since the
-- first failure of this event) has passed. $1 id, $2 attempts, $3 error,
-- $6 shop, $7 token.
UPDATE webhook_endpoints
SET attempts = $2::int, last_error = $3::text,
    first_failed_at = coalesce(first_failed_at, clock_timestamp()),
    next_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
WHERE shop_id = $6::bigint AND id = $1::bigint AND lease_token = $7::bigint
RETURNING clock_timestamp() - first_failed_at >= $5::bigint * interval '1 microsecond'
