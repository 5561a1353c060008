-- holdfast schema, version 17: pre-orders (issue #30 item 2). A key's
-- pre-order headroom is the stock of its companion key, the same shop and
-- item at the negated location (holdfast.PreorderKey): the level row of a
-- companion has a negative location, so the check on inventory_levels
-- allows any location but 0. Users never name a companion key (validation
-- refuses negative locations).
ALTER TABLE inventory_levels DROP CONSTRAINT IF EXISTS inventory_levels_location_id_check;
ALTER TABLE inventory_levels ADD CONSTRAINT inventory_levels_location_id_check CHECK (location_id <> 0);

-- A key's pre-order setting (SetPreorder): no row is cap 0, pre-orders off.
CREATE TABLE preorders (
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    inventory_item_id bigint      NOT NULL CHECK (inventory_item_id > 0),
    location_id       bigint      NOT NULL CHECK (location_id > 0),
    cap               int         NOT NULL CHECK (cap > 0),
    expected_at       timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);

-- Claimed pre-ordered units that wait for stock (a backorder), per
-- checkout line of the stocked key; converted oldest first (created_at is
-- the hold's creation), deleted once fully converted.
CREATE TABLE preorder_owed (
    id                bigserial,
    shop_id           bigint      NOT NULL CHECK (shop_id > 0),
    inventory_item_id bigint      NOT NULL CHECK (inventory_item_id > 0),
    location_id       bigint      NOT NULL CHECK (location_id > 0),
    checkout_id       uuid        NOT NULL,
    units             int         NOT NULL CHECK (units > 0),
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (shop_id, id) -- shop_id in it: a shop move copies the table
);
CREATE INDEX preorder_owed_key ON preorder_owed (shop_id, inventory_item_id, location_id, created_at, id);

-- Migration 15's placement guard, on both new shop tables.
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON preorders
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON preorder_owed
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
