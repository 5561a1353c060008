-- Give an endpoint's lease back and put it at the back of the line of due
-- endpoints (next_at now), unless a failure set a later next_at (its
-- backoff). After lease_check.sql. ? shop, id.
UPDATE webhook_endpoints
SET leased_until = NULL, next_at = GREATEST(COALESCE(next_at, UTC_TIMESTAMP(6)), UTC_TIMESTAMP(6))
WHERE shop_id = ? AND id = ?
