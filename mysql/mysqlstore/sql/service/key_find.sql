-- A key not yet revoked, by id or by hash, locked for its revocation.
-- ? id (0: by hash), sha256 of the key (NULL: by id)
SELECT id
FROM api_keys
WHERE (id = ? OR key_hash = ?) AND revoked_at IS NULL
FOR UPDATE
