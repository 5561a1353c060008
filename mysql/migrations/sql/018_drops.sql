-- Fair drops (issue #30 item 7; drop.go, engine/drop.go). A key's drop: a
-- window from starts_at for window_us in which reservations enter a
-- lottery instead of taking units. seed is secret until the draw (only
-- its SHA-256 is published); the draw moves state from open to drawn
-- exactly once, under the row's lock (FOR UPDATE), and records each
-- entrant's rank. While a key's drop is open its buffer stays empty
-- (key_state.sql, sellable.sql), so every reservation on it is short and
-- the engine sees the drop. Lock order: a drops row before any key lock.
CREATE TABLE drops (
    shop_id           BIGINT      NOT NULL,
    inventory_item_id BIGINT      NOT NULL,
    location_id       BIGINT      NOT NULL,
    starts_at         DATETIME(6) NOT NULL,
    window_us         BIGINT      NOT NULL,
    seed              VARBINARY(64) NOT NULL,
    state             VARCHAR(8)  NOT NULL,
    drawn_at          DATETIME(6) NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id),
    CONSTRAINT drops_window CHECK (window_us > 0),
    CONSTRAINT drops_state CHECK (state IN ('open', 'drawn')),
    CONSTRAINT drops_drawn CHECK ((state = 'drawn') = (drawn_at IS NOT NULL))
) ENGINE = InnoDB;

-- A drop's entrants: one per buyer (its keyed hash, the lottery ticket).
-- The entrant's cart, TTL and wait standing are its waiters row's.
CREATE TABLE drop_entries (
    shop_id           BIGINT     NOT NULL,
    inventory_item_id BIGINT     NOT NULL,
    location_id       BIGINT     NOT NULL,
    buyer_hash        VARBINARY(64) NOT NULL,
    checkout_id       BINARY(16) NOT NULL,
    wait_us           BIGINT     NOT NULL,
    draw_rank         INT        NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, buyer_hash),
    CONSTRAINT drop_entries_wait CHECK (wait_us > 0)
) ENGINE = InnoDB;

-- Migration 15's placement guard (shop moves), on both new shop tables.

CREATE TRIGGER drops_guard_i AFTER INSERT ON drops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER drops_guard_u AFTER UPDATE ON drops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER drops_guard_d AFTER DELETE ON drops
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER drop_entries_guard_i AFTER INSERT ON drop_entries
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER drop_entries_guard_u AFTER UPDATE ON drop_entries
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER drop_entries_guard_d AFTER DELETE ON drop_entries
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;
