-- The legacy's SQL ledger: what the Redis design deducted on claim. It is
-- the legacy's own, beside (not inside) holdfast's ledger, as the user's
-- existing inventory ledger would be.
CREATE TABLE IF NOT EXISTS legacy_redis_ledger (
    shop_id     bigint NOT NULL,
    item_id     bigint NOT NULL,
    location_id bigint NOT NULL,
    on_hand     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (shop_id, item_id, location_id)
);
-- One row per claimed checkout, so a retried claim deducts once.
CREATE TABLE IF NOT EXISTS legacy_redis_claims (
    shop_id     bigint      NOT NULL,
    checkout_id uuid        NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (shop_id, checkout_id)
);
