-- Bundles (issue #30 item 1). A bundle item is a shop's item id that
-- stands for components × quantities; a reservation line of it is expanded
-- into its component lines by the engine before the reserve attempt, so
-- nothing on the reservation path changes here. IF NOT EXISTS: migration 015
-- (shop moves) creates them too, to guard them, when it runs first. (Numbers are assigned per
-- feature on both engines at once; gaps are allowed.)
CREATE TABLE IF NOT EXISTS bundle_components (
    shop_id      BIGINT      NOT NULL,
    bundle_id    BIGINT      NOT NULL,
    component_id BIGINT      NOT NULL,
    quantity     INT         NOT NULL,
    position     INT         NOT NULL,
    updated_at   DATETIME(6) NOT NULL,
    PRIMARY KEY (shop_id, bundle_id, component_id),
    KEY bundle_components_component (shop_id, component_id),
    CONSTRAINT bundle_components_quantity CHECK (quantity > 0),
    CONSTRAINT bundle_components_self CHECK (component_id <> bundle_id)
) ENGINE = InnoDB;

-- One row per shop that ever defined a bundle: SetBundle locks it first
-- (an upsert), so definitions of one shop are checked for nesting one at a
-- time (READ COMMITTED takes no gap locks); version counts the changes.
CREATE TABLE IF NOT EXISTS bundle_shops (
    shop_id BIGINT NOT NULL PRIMARY KEY,
    version BIGINT NOT NULL DEFAULT 1
) ENGINE = InnoDB;
