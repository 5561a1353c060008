-- Every key, newest first, bounded.
-- $1 limit
SELECT id, shop_id, admin, name, scopes, created_at, expires_at, last_used_at, revoked_at
FROM api_keys
ORDER BY id DESC
LIMIT $1
