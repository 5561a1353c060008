-- The key with this hash: live or not (a refused key's answer says whether
-- it is revoked or expired), and the seconds it has left by the database's
-- clock (NULL: no expiry).
-- $1 sha256 of the key
SELECT id, key_hash, name, shop_id, admin, scopes,
       extract(epoch FROM expires_at - clock_timestamp())::float8,
       revoked_at IS NOT NULL,
       expires_at IS NOT NULL AND expires_at <= clock_timestamp()
FROM api_keys
WHERE key_hash = $1
