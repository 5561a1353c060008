-- Pre-orders (issue #30 item 2). A key's pre-order headroom is the stock
-- of its companion key, the same shop and item at the negated location
-- (holdfast.PreorderKey): its level, lock and buffer rows have a negative
-- location, which no table here forbids. Users never name a companion key
-- (validation refuses negative locations).

-- A key's pre-order setting (SetPreorder): no row is cap 0, pre-orders off.
CREATE TABLE preorders (
    shop_id           BIGINT      NOT NULL,
    inventory_item_id BIGINT      NOT NULL,
    location_id       BIGINT      NOT NULL,
    cap               INT         NOT NULL,
    expected_at       DATETIME(6) NOT NULL,
    updated_at        DATETIME(6) NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id),
    CONSTRAINT preorders_cap CHECK (cap > 0),
    CONSTRAINT preorders_location CHECK (location_id > 0)
) ENGINE = InnoDB;

-- Claimed pre-ordered units that wait for stock (a backorder), per
-- checkout line of the stocked key; converted oldest first (created_at is
-- the hold's creation), deleted once fully converted.
CREATE TABLE preorder_owed (
    id                BIGINT      NOT NULL AUTO_INCREMENT,
    shop_id           BIGINT      NOT NULL,
    inventory_item_id BIGINT      NOT NULL,
    location_id       BIGINT      NOT NULL,
    checkout_id       BINARY(16)  NOT NULL,
    units             INT         NOT NULL,
    created_at        DATETIME(6) NOT NULL,
    PRIMARY KEY (shop_id, id),
    KEY preorder_owed_id (id),
    KEY preorder_owed_key (shop_id, inventory_item_id, location_id, created_at, id),
    CONSTRAINT preorder_owed_units CHECK (units > 0)
) ENGINE = InnoDB;

-- Migration 15's placement guard (shop moves), on both new shop tables.

CREATE TRIGGER preorders_guard_i AFTER INSERT ON preorders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER preorders_guard_u AFTER UPDATE ON preorders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER preorders_guard_d AFTER DELETE ON preorders
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER preorder_owed_guard_i AFTER INSERT ON preorder_owed
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER preorder_owed_guard_u AFTER UPDATE ON preorder_owed
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', NEW.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = NEW.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;

CREATE TRIGGER preorder_owed_guard_d AFTER DELETE ON preorder_owed
FOR EACH ROW IF @holdfast_move IS NULL AND (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', OLD.shop_id)) IS NOT NULL OR EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = OLD.shop_id)) THEN SIGNAL SQLSTATE 'HF001' SET MESSAGE_TEXT = 'holdfast: the shop is fenced on this pod (moving, arriving or moved away)'; END IF;
