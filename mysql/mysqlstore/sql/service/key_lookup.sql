-- The key with this hash: live or not (a refused key's answer says whether
-- it is revoked or expired), and the microseconds it has left by the
-- database's clock (NULL: no expiry).
-- ? sha256 of the key
SELECT id, key_hash, name, shop_id, admin, scopes,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at),
       revoked_at IS NOT NULL,
       expires_at IS NOT NULL AND expires_at <= UTC_TIMESTAMP(6)
FROM api_keys
WHERE key_hash = ?
