-- API keys get a name, scopes, an optional expiry (rotation: the old key
-- expires a grace period after its successor is created) and a last-used
-- time, written at most once a minute per key by each server.
-- Existing keys keep every scope, as before.
ALTER TABLE api_keys
    ADD COLUMN name         text        NOT NULL DEFAULT '' CHECK (length(name) <= 100),
    ADD COLUMN scopes       text[]      NOT NULL DEFAULT '{storefront,inventory}'
        CHECK (cardinality(scopes) > 0 AND scopes <@ '{storefront,inventory}'::text[]),
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN last_used_at timestamptz;
