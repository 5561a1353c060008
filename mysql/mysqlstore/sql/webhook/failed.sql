-- A delivery failed: record it and wait ? µs before the next attempt.
-- After lease_check.sql. The lease stays: the deliverer may record a dead
-- letter next, and no other may take the endpoint in between (unlease.sql
-- gives it back, keeping the backoff). ? attempts, error, wait µs, shop,
-- id.
UPDATE webhook_endpoints
SET attempts = ?, last_error = ?,
    first_failed_at = COALESCE(first_failed_at, UTC_TIMESTAMP(6)),
    next_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND id = ?
