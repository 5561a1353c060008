-- The live, unexpired key with this hash, and the seconds it has left
-- by the database's clock (NULL: no expiry).
-- $1 sha256 of the key
SELECT id, key_hash, shop_id, admin, scopes,
       extract(epoch FROM expires_at - clock_timestamp())::float8
FROM api_keys
WHERE key_hash = $1 AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > clock_timestamp())
