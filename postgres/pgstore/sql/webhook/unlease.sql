-- Give an endpoint's lease back and put it at the back of the line of due
-- endpoints (next_at now), unless a failure set a later next_at (its
-- backoff); only while $3 is its lease token (no row: a later lease has
-- it). $1 id, $2 shop, $3 token.
UPDATE webhook_endpoints
SET leased_until = NULL, next_at = greatest(coalesce(next_at, clock_timestamp()), clock_timestamp())
WHERE shop_id = $2::bigint AND id = $1::bigint AND lease_token = $3::bigint
