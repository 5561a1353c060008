-- An event past the retry horizon: keep it as a dead letter and move the
-- endpoint past it. $1 id, $2 shop, $3 cursor, $4 event, $5 attempts,
-- $6 error.
WITH d AS (
    INSERT INTO webhook_dead_letters (endpoint_id, shop_id, cursor, event, attempts, last_error)
    VALUES ($1::bigint, $2::bigint, $3::bigint, $4::jsonb, $5::int, $6::text)
    ON CONFLICT (shop_id, endpoint_id, cursor) DO NOTHING
)
UPDATE webhook_endpoints
SET cursor = greatest(cursor, $3::bigint), attempts = 0, first_failed_at = NULL, next_at = clock_timestamp()
WHERE shop_id = $2::bigint AND id = $1::bigint
