-- A delivery failed: record it and wait $4 µs before the next attempt.
-- Returns whether the retry horizon ($5 µs since the first failure of this
-- event) has passed. $1 id, $2 attempts, $3 error, $6 shop.
UPDATE webhook_endpoints
SET attempts = $2::int, last_error = $3::text,
    first_failed_at = coalesce(first_failed_at, clock_timestamp()),
    next_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
    leased_until = NULL
WHERE shop_id = $6::bigint AND id = $1::bigint
RETURNING clock_timestamp() - first_failed_at >= $5::bigint * interval '1 microsecond'
