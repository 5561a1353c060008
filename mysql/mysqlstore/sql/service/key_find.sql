-- A key not yet revoked, by id or by hash, locked for its revocation, and
-- its shop (0: an admin key) for the audit log.
-- ? id (0: by hash), sha256 of the key (NULL: by id)
SELECT id, COALESCE(shop_id, 0)
FROM api_keys
WHERE (id = ? OR key_hash = ?) AND revoked_at IS NULL
FOR UPDATE
