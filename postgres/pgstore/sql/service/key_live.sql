-- A live, unexpired key by id or by hash, locked for a rotation.
-- $1 id (0: by hash), $2 sha256 of the key (NULL: by id)
SELECT id, shop_id, admin, name, scopes
FROM api_keys
WHERE (id = $1 OR key_hash = $2) AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > clock_timestamp())
FOR UPDATE
