-- Revoke a live key by id or by hash; returns the revoked key's id and its
-- shop (0: an admin key) for the audit log.
-- $1 id (0: by hash), $2 sha256 of the key (NULL: by id)
UPDATE api_keys
SET revoked_at = clock_timestamp()
WHERE (id = $1 OR key_hash = $2) AND revoked_at IS NULL
RETURNING id, coalesce(shop_id, 0)
