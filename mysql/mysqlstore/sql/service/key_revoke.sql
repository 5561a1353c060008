-- Revoke the key key_find.sql locked.
-- ? id
UPDATE api_keys
SET revoked_at = UTC_TIMESTAMP(6)
WHERE id = ? AND revoked_at IS NULL
