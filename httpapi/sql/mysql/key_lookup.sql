-- The live, unexpired key with this hash, and the microseconds it has
-- left by the database's clock (NULL: no expiry).
-- ? sha256 of the key
SELECT id, key_hash, shop_id, admin, scopes,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)
FROM api_keys
WHERE key_hash = ? AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6))
