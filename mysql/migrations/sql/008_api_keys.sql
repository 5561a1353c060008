-- API keys for holdfast serve (package httpapi's MySQLStore), as
-- PostgreSQL's api_keys (migrate 001 and 003): only the SHA-256 of a key is
-- stored; a key reaches one shop, or every shop (admin); its scopes are a
-- sorted comma list; rotation makes the old key expire a grace period
-- after its successor is created; last_used_at is written at most once a
-- minute per key by each server.
CREATE TABLE api_keys (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    key_hash     BINARY(32)   NOT NULL,
    shop_id      BIGINT       NULL,
    admin        BOOLEAN      NOT NULL DEFAULT FALSE,
    name         VARCHAR(100) NOT NULL DEFAULT '',
    scopes       VARCHAR(40)  NOT NULL DEFAULT 'inventory,storefront',
    created_at   DATETIME(6)  NOT NULL,
    expires_at   DATETIME(6)  NULL,
    last_used_at DATETIME(6)  NULL,
    revoked_at   DATETIME(6)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY api_keys_hash (key_hash),
    CONSTRAINT api_keys_shop CHECK (shop_id > 0),
    CONSTRAINT api_keys_owner CHECK (admin OR shop_id IS NOT NULL),
    CONSTRAINT api_keys_scopes CHECK (scopes IN ('inventory', 'storefront', 'inventory,storefront'))
) ENGINE = InnoDB;
