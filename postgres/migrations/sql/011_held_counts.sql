-- Per-key held counts (issue #15 item 4: cost proportional to change).
--
-- held_counts keeps, per key, the sum of reserved_quantities in a few rows
-- instead of one row per held line, so a refill, the sold-out checks and
-- the replenisher read a key's held units from a handful of rows whatever
-- the number of its holds.
--
-- Written only by the triggers below, in the statement that changes the
-- lines, so in any snapshot the sum of a key's held_counts rows equals the
-- sum of its lines (a transaction's lines and counts commit together):
-- every statement that read `sum(reserved_quantities.quantity)` from one
-- snapshot may read the counts instead and keep its reasoning
-- (docs/DESIGN.md, "Why the invariant holds").
--
-- No new hot row: each backend writes its own row of a key (stripe =
-- pg_backend_pid(); two transactions of one backend never overlap), so
-- reservers never wait on each other here. The replenisher folds a key's
-- backend rows into stripe 0 (held_fold.sql, under the key's advisory lock,
-- skipping rows a transaction holds); only the fold writes stripe 0.
CREATE TABLE held_counts (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    stripe            integer NOT NULL,
    held              bigint  NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, stripe)
);

CREATE FUNCTION holdfast_held_lines_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO held_counts AS c (shop_id, inventory_item_id, location_id, stripe, held)
    SELECT shop_id, inventory_item_id, location_id, pg_backend_pid(), sum(quantity)
    FROM held_lines_new
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (shop_id, inventory_item_id, location_id, stripe)
    DO UPDATE SET held = c.held + EXCLUDED.held;
    RETURN NULL;
END $$;

CREATE FUNCTION holdfast_held_lines_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO held_counts AS c (shop_id, inventory_item_id, location_id, stripe, held)
    SELECT shop_id, inventory_item_id, location_id, pg_backend_pid(), -sum(quantity)
    FROM held_lines_old
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (shop_id, inventory_item_id, location_id, stripe)
    DO UPDATE SET held = c.held + EXCLUDED.held;
    RETURN NULL;
END $$;

-- Updates are rare (an edit's new quantity; Extend rewrites only
-- expires_at and does not fire this): one row at a time.
CREATE FUNCTION holdfast_held_line_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Two statements, not one with two rows: the same key twice in one
    -- INSERT … ON CONFLICT is an error.
    INSERT INTO held_counts AS c (shop_id, inventory_item_id, location_id, stripe, held)
    VALUES (OLD.shop_id, OLD.inventory_item_id, OLD.location_id, pg_backend_pid(), -OLD.quantity)
    ON CONFLICT (shop_id, inventory_item_id, location_id, stripe)
    DO UPDATE SET held = c.held + EXCLUDED.held;
    INSERT INTO held_counts AS c (shop_id, inventory_item_id, location_id, stripe, held)
    VALUES (NEW.shop_id, NEW.inventory_item_id, NEW.location_id, pg_backend_pid(), NEW.quantity)
    ON CONFLICT (shop_id, inventory_item_id, location_id, stripe)
    DO UPDATE SET held = c.held + EXCLUDED.held;
    RETURN NULL;
END $$;

-- Writers wait here while the counts are filled in: the triggers and the
-- backfill must see the same lines.
LOCK TABLE reserved_quantities IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER holdfast_held_added AFTER INSERT ON reserved_quantities
    REFERENCING NEW TABLE AS held_lines_new
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_held_lines_added();
CREATE TRIGGER holdfast_held_removed AFTER DELETE ON reserved_quantities
    REFERENCING OLD TABLE AS held_lines_old
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_held_lines_removed();
CREATE TRIGGER holdfast_held_changed AFTER UPDATE ON reserved_quantities
    FOR EACH ROW
    WHEN (OLD.quantity IS DISTINCT FROM NEW.quantity
          OR OLD.shop_id IS DISTINCT FROM NEW.shop_id
          OR OLD.inventory_item_id IS DISTINCT FROM NEW.inventory_item_id
          OR OLD.location_id IS DISTINCT FROM NEW.location_id)
    EXECUTE FUNCTION holdfast_held_line_changed();

INSERT INTO held_counts (shop_id, inventory_item_id, location_id, stripe, held)
SELECT shop_id, inventory_item_id, location_id, 0, sum(quantity)
FROM reserved_quantities
GROUP BY 1, 2, 3;
