-- holdfast schema, version 1.
--
-- Lock order on every path: holds (one checkout) -> per-key advisory lock ->
-- allocation buffers (reservation_units, inventory_counters) ->
-- reserved_quantities -> inventory_levels. See docs/DESIGN.md.

-- The ledger: the source of truth. Only claims and stock adjustments write
-- available. strategy and pool_cap are per-key overrides of the client's
-- defaults (NULL means the default).
CREATE TABLE inventory_levels (
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    inventory_item_id bigint      NOT NULL CHECK (inventory_item_id > 0),
    location_id       bigint      NOT NULL CHECK (location_id > 0),
    available         integer     NOT NULL CHECK (available >= 0),
    strategy          text        CHECK (strategy IN ('counter', 'batch', 'pool', 'slots')),
    pool_cap          integer     CHECK (pool_cap > 0),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);

-- The bounded row-per-unit pool: one row is one sellable unit.
CREATE SEQUENCE reservation_units_id_seq AS bigint CACHE 100;
CREATE TABLE reservation_units (
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    id                bigint      NOT NULL DEFAULT nextval('reservation_units_id_seq'),
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, inventory_item_id, location_id, id)
) PARTITION BY HASH (shop_id);

-- Storage and autovacuum settings belong on the leaf partitions: the
-- partitioned parent has no storage and rejects them. Vacuum on absolute
-- dead-row counts, unthrottled: this table churns on every reservation. No
-- truncation: it needs an exclusive lock that collides with reservers, and
-- the space is reused at once.
DO $$
BEGIN
  FOR i IN 0..15 LOOP
    EXECUTE format(
      'CREATE TABLE reservation_units_p%s PARTITION OF reservation_units
         FOR VALUES WITH (MODULUS 16, REMAINDER %s)
         WITH (fillfactor = 70,
               autovacuum_vacuum_scale_factor  = 0.0,
               autovacuum_vacuum_threshold     = 1000,
               autovacuum_analyze_scale_factor = 0.0,
               autovacuum_analyze_threshold    = 5000,
               autovacuum_vacuum_cost_delay    = 0,
               autovacuum_vacuum_cost_limit    = 10000,
               vacuum_truncate                 = false)', i, i);
  END LOOP;
END $$;

-- Counter buffers: the sellable units of a counter key (one slot, slot 0) or
-- a slotted key (several slots picked with SKIP LOCKED). Updates touch no
-- indexed column, so with fillfactor 50 they stay HOT.
CREATE TABLE inventory_counters (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    slot              integer NOT NULL CHECK (slot >= 0),
    units             integer NOT NULL CHECK (units >= 0),
    PRIMARY KEY (shop_id, inventory_item_id, location_id, slot)
) WITH (fillfactor = 50,
        autovacuum_vacuum_scale_factor = 0.0,
        autovacuum_vacuum_threshold    = 1000,
        autovacuum_vacuum_cost_delay   = 0);

-- One row per checkout: the hold while status = 'held', its outcome record
-- after (kept for the retention window, then purged in batches).
CREATE TABLE holds (
    checkout_id uuid        PRIMARY KEY,
    shop_id     bigint      NOT NULL,
    status      text        NOT NULL CHECK (status IN ('held', 'claimed', 'released', 'expired')),
    lines       jsonb       NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    deadline    timestamptz NOT NULL,
    ended_at    timestamptz,
    CHECK ((status = 'held') = (ended_at IS NULL))
);
CREATE INDEX holds_expiry ON holds (expires_at) WHERE status = 'held';
CREATE INDEX holds_ended ON holds (ended_at) WHERE status <> 'held';

-- Active holds, one row per line: exactly the units that are neither back in
-- a buffer nor claimed (expired holds included until the sweeper takes them).
CREATE TABLE reserved_quantities (
    id                bigserial   PRIMARY KEY,
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    checkout_id       uuid        NOT NULL,
    quantity          integer     NOT NULL CHECK (quantity > 0),
    expires_at        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (checkout_id, inventory_item_id, location_id)
);
-- No index on expires_at: the sweeper finds expired checkouts through
-- holds_expiry, and one index fewer here is one index insert fewer per held
-- line (and lets Extend's update of expires_at stay HOT).
CREATE INDEX idx_reserved_scope ON reserved_quantities (shop_id, inventory_item_id, location_id) INCLUDE (quantity);

-- The audit trail: every change to available, append-only.
CREATE TABLE inventory_ledger (
    id                bigserial   PRIMARY KEY,
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    delta             integer     NOT NULL,
    available_after   integer     NOT NULL,
    reason            text        NOT NULL,
    reference         text,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX inventory_ledger_key ON inventory_ledger (shop_id, inventory_item_id, location_id, id);

CREATE FUNCTION inventory_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'inventory_ledger is append-only' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER inventory_ledger_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON inventory_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION inventory_ledger_append_only();

-- Keys that hit the inline (buyer-facing) replenishment path, for operators.
CREATE TABLE replenish_stats (
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    inline_count      bigint      NOT NULL DEFAULT 0,
    last_inline_at    timestamptz,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);

-- API keys for holdfast serve: only a hash is stored.
CREATE TABLE api_keys (
    id          bigserial   PRIMARY KEY,
    key_hash    bytea       NOT NULL UNIQUE,
    shop_id     bigint      CHECK (shop_id > 0),
    admin       boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at  timestamptz,
    CHECK (admin OR shop_id IS NOT NULL)
);
