-- A live, unexpired key by id or by hash, locked for a rotation.
-- ? id (0: by hash), sha256 of the key (NULL: by id)
SELECT id, shop_id, admin, name, scopes
FROM api_keys
WHERE (id = ? OR key_hash = ?) AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6))
FOR UPDATE
