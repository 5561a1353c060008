-- holdfast schema, version 16: bundles (issue #30 item 1). A bundle item is
-- a shop's item id that stands for components × quantities; a reservation
-- line of it is expanded into its component lines by the engine before the
-- reserve attempt, so nothing on the reservation path changes here.
CREATE TABLE bundle_components (
    shop_id      bigint      NOT NULL CHECK (shop_id > 0),
    bundle_id    bigint      NOT NULL CHECK (bundle_id > 0),
    component_id bigint      NOT NULL CHECK (component_id > 0),
    quantity     int         NOT NULL CHECK (quantity > 0),
    position     int         NOT NULL, -- the order the components were given in
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (shop_id, bundle_id, component_id),
    CHECK (component_id <> bundle_id)
);
-- "Is this item a component of some bundle?" (no nesting).
CREATE INDEX bundle_components_component ON bundle_components (shop_id, component_id);

-- One row per shop that ever defined a bundle: SetBundle takes it FOR
-- UPDATE (an upsert) first, so definitions of one shop are checked for
-- nesting one at a time; version counts the shop's definition changes.
CREATE TABLE bundle_shops (
    shop_id bigint PRIMARY KEY CHECK (shop_id > 0),
    version bigint NOT NULL DEFAULT 1
);

-- Migration 15's placement guard, on both new shop tables.
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON bundle_components
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON bundle_shops
    FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard();
