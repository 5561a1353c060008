-- A rotated key expires after its grace period (never later than it
-- would have anyway).
-- $1 id, $2 grace in seconds
UPDATE api_keys
SET expires_at = least(coalesce(expires_at, 'infinity'), clock_timestamp() + make_interval(secs => $2))
WHERE id = $1
RETURNING expires_at
