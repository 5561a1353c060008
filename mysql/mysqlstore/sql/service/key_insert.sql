-- A new key; only its hash is stored. Its id is LAST_INSERT_ID().
-- ? sha256 of the key, shop (NULL for an admin key), admin, name,
-- scopes (comma list, sorted), expires_at (NULL: never)
INSERT INTO api_keys (key_hash, shop_id, admin, name, scopes, expires_at, created_at)
VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))
