-- Fair drops (issue #30 item 7; drop.go, engine/drop.go). A key's drop: a
-- window from starts_at for window_us in which reservations enter a
-- lottery instead of taking units. seed is secret until the draw (only
-- its SHA-256 is published); the draw moves state from open to drawn
-- exactly once, under the row's lock, and records each entrant's rank.
-- While a key's drop is open its buffer stays empty (refill.sql,
-- sellable.sql, key_state.sql), so every reservation on it is short and
-- the engine sees the drop. Lock order: a drops row before any key lock.
CREATE TABLE drops (
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    inventory_item_id bigint      NOT NULL,
    location_id       bigint      NOT NULL,
    starts_at         timestamptz NOT NULL,
    window_us         bigint      NOT NULL CHECK (window_us > 0),
    seed              bytea       NOT NULL,
    state             text        NOT NULL CHECK (state IN ('open', 'drawn')),
    drawn_at          timestamptz,
    CHECK ((state = 'drawn') = (drawn_at IS NOT NULL)),
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);
CREATE INDEX drops_open ON drops (starts_at) WHERE state = 'open';

-- A drop's entrants: one per buyer (its keyed hash, the lottery ticket).
-- The entrant's cart, TTL and wait standing are its waiters row's.
CREATE TABLE drop_entries (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    buyer_hash        bytea   NOT NULL,
    checkout_id       uuid    NOT NULL,
    wait_us           bigint  NOT NULL CHECK (wait_us > 0),
    entry_seq         bigint  GENERATED ALWAYS AS IDENTITY,
    draw_rank         integer,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, buyer_hash)
);

-- Migration 15's placement guard, on both new shop tables.
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON drops
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON drop_entries
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
