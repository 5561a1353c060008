-- The live key with this hash.
-- $1 sha256 of the key
SELECT id, key_hash, shop_id, admin
FROM api_keys
WHERE key_hash = $1 AND revoked_at IS NULL
