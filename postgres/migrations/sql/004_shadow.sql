-- The shadow layer (package shadow): per-shop migration mode from a legacy
-- hold store to holdfast, and the comparison of both systems' answers.

-- One row per enrolled shop. mode: legacy (legacy only), shadow (legacy is
-- the truth, holdfast also written), primary (holdfast is the truth, legacy
-- also written), holdfast (holdfast only). shadow_since is when the shop
-- last entered shadow: its pre-shadow holds may live up to the hold
-- lifetime cap after it (warming).
CREATE TABLE holdfast_shadow_modes (
    shop_id      bigint      PRIMARY KEY CHECK (shop_id > 0),
    mode         text        NOT NULL DEFAULT 'legacy'
                 CHECK (mode IN ('legacy', 'shadow', 'primary', 'holdfast')),
    shadow_since timestamptz,
    changed_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A single counter bumped by every mode change, so replicas poll one row
-- and reload the modes only when it moved.
CREATE TABLE holdfast_shadow_revision (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    revision bigint  NOT NULL
);
INSERT INTO holdfast_shadow_revision (revision) VALUES (0);

-- Every mode change, for the audit trail.
CREATE TABLE holdfast_shadow_mode_changes (
    id         bigserial   PRIMARY KEY,
    shop_id    bigint      NOT NULL,
    from_mode  text        NOT NULL,
    to_mode    text        NOT NULL,
    reason     text        NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Aggregate comparison counters per shop, operation and kind (agree,
-- warming, outcome:<legacy>/<holdfast>, units, error, single). The bucket
-- arrays count each side's latencies in the layer's fixed buckets.
CREATE TABLE holdfast_shadow_stats (
    shop_id          bigint      NOT NULL,
    op               text        NOT NULL,
    kind             text        NOT NULL,
    n                bigint      NOT NULL,
    legacy_buckets   bigint[]    NOT NULL,
    holdfast_buckets bigint[]    NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, op, kind)
);

-- A bounded sample of disagreements, both answers and the request.
CREATE TABLE holdfast_shadow_samples (
    id          bigserial   PRIMARY KEY,
    shop_id     bigint      NOT NULL,
    op          text        NOT NULL,
    kind        text        NOT NULL,
    request     jsonb       NOT NULL,
    legacy      jsonb       NOT NULL,
    holdfast    jsonb       NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX holdfast_shadow_samples_shop ON holdfast_shadow_samples (shop_id, id);
