-- Record that a key was used (at most once a minute per key per server).
-- ? id
UPDATE api_keys
SET last_used_at = UTC_TIMESTAMP(6)
WHERE id = ?
