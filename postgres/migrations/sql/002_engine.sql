-- holdfast schema, version 2: the engine's changes of issue #10.
--
-- Lock order on every path (docs/DESIGN.md): holds (one checkout) ->
-- per-key advisory locks in key order -> allocation buffers
-- (reservation_units, inventory_counters) -> reserved_quantities ->
-- inventory_levels.

-- Checkout ids are scoped per shop: another shop using the same id is a
-- different checkout, never a conflict (and never an oracle across
-- tenants). The hold's key is (shop_id, checkout_id); its lines follow.
ALTER TABLE holds DROP CONSTRAINT holds_pkey;
ALTER TABLE holds ADD PRIMARY KEY (shop_id, checkout_id);

DO $$
DECLARE
    c text;
BEGIN
    SELECT conname INTO STRICT c
    FROM pg_constraint
    WHERE conrelid = 'reserved_quantities'::regclass AND contype = 'u';
    EXECUTE format('ALTER TABLE reserved_quantities DROP CONSTRAINT %I', c);
END $$;
ALTER TABLE reserved_quantities
    ADD CONSTRAINT reserved_quantities_line UNIQUE (shop_id, checkout_id, inventory_item_id, location_id);

-- Idempotent stock changes: a change sent with an id is recorded under
-- (shop_id, change_id) in the transaction that applies it, with the level
-- it answered. A retry finds the record and answers the same; another
-- change under the same id is a conflict. Records are purged after the
-- outcome retention window, like hold outcomes.
CREATE TABLE stock_changes (
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    change_id         text        NOT NULL CHECK (change_id <> ''),
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    set_to            integer,
    delta             integer,
    reason            text        NOT NULL,
    reference         text,
    outcome           jsonb,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (shop_id, change_id)
);
CREATE INDEX stock_changes_created ON stock_changes (created_at);

-- Keys whose buffers may want a refill that a release or sweep could not
-- do at once (the key's lock or counter rows were busy): the replenisher
-- works through this queue, and the keys its own process reserved on,
-- instead of scanning every key.
CREATE TABLE replenish_queue (
    shop_id           bigint      NOT NULL,
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    queued_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);
