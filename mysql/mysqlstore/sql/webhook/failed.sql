-- A delivery failed: record it and wait ? µs before the next attempt.
-- ? attempts, error, wait µs, id.
UPDATE webhook_endpoints
SET attempts = ?, last_error = ?,
    first_failed_at = COALESCE(first_failed_at, UTC_TIMESTAMP(6)),
    next_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)),
    leased_until = NULL
WHERE id = ?
