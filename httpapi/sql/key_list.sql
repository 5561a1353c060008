-- Every key, newest first, bounded.
-- $1 limit
SELECT id, shop_id, admin, created_at, revoked_at
FROM api_keys
ORDER BY id DESC
LIMIT $1
