-- A rotated key expires after its grace period (never later than it
-- would have anyway).
-- ? grace in microseconds (twice), id
UPDATE api_keys
SET expires_at = CASE
        WHEN expires_at IS NULL OR expires_at > TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
        THEN TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
        ELSE expires_at END
WHERE id = ?
