-- holdfast MySQL/MariaDB schema, version 15: moving a shop between pods
-- (issue #28, package pods: `holdfast pods move`; the MariaDB side is
-- package mysql/mymove). (Numbers are assigned per feature on both engines
-- at once; PostgreSQL's 015 is the same feature.)
--
-- 1. Keys that include shop_id. A move copies a shop's rows, ids and all,
--    into another pod, whose own shops used the same ids (every pod's
--    AUTO_INCREMENTs start at 1): the tables keyed by a global id get
--    (shop_id, id), with KEY (id) for InnoDB's AUTO_INCREMENT rule, and
--    waiters.seq is no longer unique across shops (the waitlist orders by
--    it within a shop). InnoDB raises a table's AUTO_INCREMENT past an id
--    inserted explicitly, so a copy's ids keep a shop's new ids (and the
--    event sequencer's id order) growing on the target. SQL that addressed
--    these rows by id alone now says shop_id too (events_assign.sql).
--    Not re-keyed: webhook_endpoints and webhook_dead_letters (keyed by id,
--    with a foreign key between them); a move refuses a shop with rows
--    there.
ALTER TABLE inventory_ledger DROP PRIMARY KEY, ADD PRIMARY KEY (shop_id, id), ADD KEY inventory_ledger_id (id);
ALTER TABLE holdfast_events DROP PRIMARY KEY, ADD PRIMARY KEY (shop_id, id), ADD KEY holdfast_events_id (id);
ALTER TABLE audit_log DROP PRIMARY KEY, ADD PRIMARY KEY (shop_id, id), ADD KEY audit_log_id (id);
ALTER TABLE waiters DROP KEY waiters_seq, ADD KEY waiters_seq (seq);

-- 2. The placement guard. A write of a shop fenced here (a move copying it,
--    or the shop arriving or gone) is refused with SQLSTATE HF001, which
--    the engine answers holdfast.ErrShopMoved (nothing applied; retry).
--    Two signals, checked by a trigger on every table holding shops' rows:
--    * while a move copies the shop, the mover holds the named lock
--      holdfast_move_<CRC32 of the database name>_<shop> (GET_LOCK): lock
--      names are server-wide, so the lock fences every process writing
--      this database, the serving ones and any other, and it ends with the
--      mover's session if the mover dies;
--    * holdfast_shop_fences marks a shop arriving here ('incoming': copied,
--      not yet switched) or gone ('gone': moved away; its rows are purged).
--    The guard runs AFTER each row's insert, update or delete, so it
--    checks while the statement holds the row's lock: a write that passed
--    it before the mover took the named lock holds a lock on a row of the
--    shop, and the mover's wait for the writes in flight (a locking read
--    of every row of the shop, package mymove) waits for its transaction;
--    every later write is refused. (A BEFORE INSERT check could pass, then
--    wait behind the mover's locks and insert after the copy.)
--    A session with @holdfast_move set (the mover's copy, discard and
--    purge, which write a fenced shop's rows on purpose) passes the guard
--    and the derived-row triggers: copied rows arrive with their derived
--    rows (events) already.
CREATE TABLE holdfast_shop_fences (
    shop_id BIGINT       NOT NULL PRIMARY KEY,
    state   VARCHAR(10)  NOT NULL,
    pod     VARCHAR(255) NOT NULL DEFAULT '', -- the other pod of the move
    since   DATETIME(6)  NOT NULL,
    CONSTRAINT holdfast_shop_fences_shop CHECK (shop_id > 0),
    CONSTRAINT holdfast_shop_fences_state CHECK (state IN ('incoming', 'gone'))
) ENGINE = InnoDB;

-- The derived-row triggers skip the mover's writes (its copy carries the
-- events as they were). The ledger stays append-only except for the
-- mover's deletes of a shop fenced here (a discarded copy, a purge).
DROP TRIGGER IF EXISTS holdfast_hold_created;
CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
SELECT NEW.shop_id, 'hold.created', NEW.checkout_id, NEW.cart, NEW.expires_at, NEW.created_at
FROM DUAL
WHERE @holdfast_move IS NULL;
DROP TRIGGER IF EXISTS holdfast_hold_changed;
CREATE TRIGGER holdfast_hold_changed AFTER UPDATE ON holds
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
SELECT NEW.shop_id, t.type, NEW.checkout_id, NEW.cart, NEW.expires_at, COALESCE(NEW.ended_at, UTC_TIMESTAMP(6))
FROM (SELECT CASE
        WHEN NEW.status <> OLD.status THEN CONCAT('hold.', NEW.status)
        WHEN NOT (CAST(NEW.cart AS CHAR) <=> CAST(OLD.cart AS CHAR)) THEN 'hold.edited'
        WHEN NOT (NEW.expires_at <=> OLD.expires_at) THEN 'hold.extended'
      END AS type) t
WHERE t.type IS NOT NULL AND @holdfast_move IS NULL;
DROP TRIGGER IF EXISTS holdfast_stock_changed;
CREATE TRIGGER holdfast_stock_changed AFTER INSERT ON inventory_ledger
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, reference, created_at)
SELECT NEW.shop_id, 'stock.changed', NEW.inventory_item_id, NEW.location_id, NEW.delta, NEW.available_after, NEW.reason, NEW.reference, NEW.created_at
FROM DUAL
WHERE NOT NEW.claim AND @holdfast_move IS NULL;
DROP TRIGGER IF EXISTS inventory_ledger_no_delete;
CREATE TRIGGER inventory_ledger_no_delete BEFORE DELETE ON inventory_ledger
FOR EACH ROW IF @holdfast_move IS NULL OR NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id) THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'inventory_ledger is append-only'; END IF;

-- The bundle tables (016) exist before this file runs on a database
-- migrated to 16 already, and not yet on a fresh one (versions run in
-- order): both files create them if missing, with the same definition, so
-- their guards below can be made either way.
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

CREATE TABLE IF NOT EXISTS bundle_shops (
    shop_id BIGINT NOT NULL PRIMARY KEY,
    version BIGINT NOT NULL DEFAULT 1
) ENGINE = InnoDB;

-- The guard, on every table with a shop_id column but api_keys (global,
-- looked up before the shop is known) and holdfast_shop_fences. A table
-- added later that holds shops' rows gets the same three triggers in its
-- own migration (mysql/mymove's TestGuardOnEveryShopTable lists the tables
-- and fails for one without).
CREATE TRIGGER audit_log_guard_i AFTER INSERT ON audit_log
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER audit_log_guard_u AFTER UPDATE ON audit_log
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER audit_log_guard_d AFTER DELETE ON audit_log
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_components_guard_i AFTER INSERT ON bundle_components
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_components_guard_u AFTER UPDATE ON bundle_components
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_components_guard_d AFTER DELETE ON bundle_components
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_shops_guard_i AFTER INSERT ON bundle_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_shops_guard_u AFTER UPDATE ON bundle_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER bundle_shops_guard_d AFTER DELETE ON bundle_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_limits_guard_i AFTER INSERT ON buyer_limits
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_limits_guard_u AFTER UPDATE ON buyer_limits
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_limits_guard_d AFTER DELETE ON buyer_limits
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_locks_guard_i AFTER INSERT ON buyer_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_locks_guard_u AFTER UPDATE ON buyer_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER buyer_locks_guard_d AFTER DELETE ON buyer_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_keys_guard_i AFTER INSERT ON holdfast_event_keys
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_keys_guard_u AFTER UPDATE ON holdfast_event_keys
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_keys_guard_d AFTER DELETE ON holdfast_event_keys
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_shops_guard_i AFTER INSERT ON holdfast_event_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_shops_guard_u AFTER UPDATE ON holdfast_event_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_event_shops_guard_d AFTER DELETE ON holdfast_event_shops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_events_guard_i AFTER INSERT ON holdfast_events
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_events_guard_u AFTER UPDATE ON holdfast_events
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holdfast_events_guard_d AFTER DELETE ON holdfast_events
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holds_guard_i AFTER INSERT ON holds
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holds_guard_u AFTER UPDATE ON holds
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER holds_guard_d AFTER DELETE ON holds
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_counters_guard_i AFTER INSERT ON inventory_counters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_counters_guard_u AFTER UPDATE ON inventory_counters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_counters_guard_d AFTER DELETE ON inventory_counters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_ledger_guard_i AFTER INSERT ON inventory_ledger
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_ledger_guard_u AFTER UPDATE ON inventory_ledger
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_ledger_guard_d AFTER DELETE ON inventory_ledger
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_levels_guard_i AFTER INSERT ON inventory_levels
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_levels_guard_u AFTER UPDATE ON inventory_levels
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_levels_guard_d AFTER DELETE ON inventory_levels
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_locks_guard_i AFTER INSERT ON inventory_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_locks_guard_u AFTER UPDATE ON inventory_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER inventory_locks_guard_d AFTER DELETE ON inventory_locks
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER location_orders_guard_i AFTER INSERT ON location_orders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER location_orders_guard_u AFTER UPDATE ON location_orders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER location_orders_guard_d AFTER DELETE ON location_orders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reservation_units_guard_i AFTER INSERT ON reservation_units
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reservation_units_guard_u AFTER UPDATE ON reservation_units
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reservation_units_guard_d AFTER DELETE ON reservation_units
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserve_inflight_guard_i AFTER INSERT ON reserve_inflight
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserve_inflight_guard_u AFTER UPDATE ON reserve_inflight
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserve_inflight_guard_d AFTER DELETE ON reserve_inflight
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserved_quantities_guard_i AFTER INSERT ON reserved_quantities
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserved_quantities_guard_u AFTER UPDATE ON reserved_quantities
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER reserved_quantities_guard_d AFTER DELETE ON reserved_quantities
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER stock_changes_guard_i AFTER INSERT ON stock_changes
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER stock_changes_guard_u AFTER UPDATE ON stock_changes
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER stock_changes_guard_d AFTER DELETE ON stock_changes
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiter_lines_guard_i AFTER INSERT ON waiter_lines
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiter_lines_guard_u AFTER UPDATE ON waiter_lines
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiter_lines_guard_d AFTER DELETE ON waiter_lines
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiters_guard_i AFTER INSERT ON waiters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiters_guard_u AFTER UPDATE ON waiters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER waiters_guard_d AFTER DELETE ON waiters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_dead_letters_guard_i AFTER INSERT ON webhook_dead_letters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_dead_letters_guard_u AFTER UPDATE ON webhook_dead_letters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_dead_letters_guard_d AFTER DELETE ON webhook_dead_letters
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_endpoints_guard_i AFTER INSERT ON webhook_endpoints
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_endpoints_guard_u AFTER UPDATE ON webhook_endpoints
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER webhook_endpoints_guard_d AFTER DELETE ON webhook_endpoints
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;
