-- A new key; only its hash is stored.
-- $1 sha256 of the key, $2 shop (NULL for an admin key), $3 admin,
-- $4 name, $5 scopes, $6 expires_at (NULL: never)
INSERT INTO api_keys (key_hash, shop_id, admin, name, scopes, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, created_at
