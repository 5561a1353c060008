-- A new key; only its hash is stored.
-- $1 sha256 of the key, $2 shop (NULL for an admin key), $3 admin
INSERT INTO api_keys (key_hash, shop_id, admin)
VALUES ($1, $2, $3)
RETURNING id, created_at
