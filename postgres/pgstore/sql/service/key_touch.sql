-- Record that a key was used (at most once a minute per key per server).
-- $1 id
UPDATE api_keys
SET last_used_at = clock_timestamp()
WHERE id = $1
