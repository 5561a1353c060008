-- holdfast schema for MySQL/MariaDB, version 5: durable events (issue #17
-- item 1). Every state change writes its event in the same transaction, by
-- the triggers below. An event gets its id on insert; its per-shop cursor
-- (seq) is assigned later by the sequencer (one at a time across processes:
-- the lock row below), in the order it sees committed events, so a reader
-- paging with after=cursor never misses an event that committed late.
-- Each trigger is one statement (the migration runner splits on a
-- semicolon at the end of a line).
CREATE TABLE holdfast_events (
    id                BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    shop_id           BIGINT       NOT NULL,
    seq               BIGINT       NULL,
    type              VARCHAR(40)  NOT NULL,
    checkout_id       BINARY(16)   NULL,
    cart              JSON         NULL,
    expires_at        DATETIME(6)  NULL,
    inventory_item_id BIGINT       NULL,
    location_id       BIGINT       NULL,
    delta             INT          NULL,
    available         INT          NULL,
    reason            VARCHAR(500) NULL,
    reference         VARCHAR(500) NULL,
    created_at        DATETIME(6)  NOT NULL,
    UNIQUE KEY holdfast_events_feed (shop_id, seq),
    KEY holdfast_events_pending (seq, id),
    KEY holdfast_events_created (created_at)
) ENGINE = InnoDB;

-- Each shop's last assigned cursor. Written only by the sequencer.
CREATE TABLE holdfast_event_shops (
    shop_id  BIGINT NOT NULL PRIMARY KEY,
    last_seq BIGINT NOT NULL
) ENGINE = InnoDB;

-- The sequencer's lock row: one sequencer at a time across processes.
CREATE TABLE holdfast_event_sequencer (
    id TINYINT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

INSERT INTO holdfast_event_sequencer (id) VALUES (1);

-- Derived key events (sold out / back in stock): the state last reported.
CREATE TABLE holdfast_event_keys (
    shop_id           BIGINT  NOT NULL,
    inventory_item_id BIGINT  NOT NULL,
    location_id       BIGINT  NOT NULL,
    sold_out          BOOLEAN NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
) ENGINE = InnoDB;

CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
VALUES (NEW.shop_id, 'hold.created', NEW.checkout_id, NEW.cart, NEW.expires_at, NEW.created_at);

CREATE TRIGGER holdfast_hold_changed AFTER UPDATE ON holds
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
SELECT NEW.shop_id, t.type, NEW.checkout_id, NEW.cart, NEW.expires_at, COALESCE(NEW.ended_at, UTC_TIMESTAMP(6))
FROM (SELECT CASE
        WHEN NEW.status <> OLD.status THEN CONCAT('hold.', NEW.status)
        WHEN NOT (CAST(NEW.cart AS CHAR) <=> CAST(OLD.cart AS CHAR)) THEN 'hold.edited'
        WHEN NOT (NEW.expires_at <=> OLD.expires_at) THEN 'hold.extended'
      END AS type) t
WHERE t.type IS NOT NULL;

CREATE TRIGGER holdfast_stock_changed AFTER INSERT ON inventory_ledger
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, reference, created_at)
SELECT NEW.shop_id, 'stock.changed', NEW.inventory_item_id, NEW.location_id, NEW.delta, NEW.available_after, NEW.reason, NEW.reference, NEW.created_at
FROM DUAL
WHERE NOT (NEW.reason IN ('claim', 'claim-after-expiry')
           AND EXISTS (SELECT 1 FROM holds h
                       WHERE h.shop_id = NEW.shop_id
                         AND h.checkout_id = UNHEX(REPLACE(COALESCE(NEW.reference, ''), '-', ''))
                         AND h.status = 'claimed'));
