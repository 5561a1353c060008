-- holdfast schema for MySQL 8.0 / MariaDB 10.11, version 1.
--
-- Lock order on every path (see mysql/doc.go):
--   holds (one checkout) -> inventory_locks (per-key lock rows, key order) ->
--   inventory_levels (key order) -> buffers (inventory_counters in key
--   order, then reservation_units with SKIP LOCKED) -> holds inserts ->
--   reserved_quantities -> inventory_levels for a claim's deduction.
-- Every table is InnoDB; every key column pair is (shop_id, inventory_item_id,
-- location_id), the seed's inventory_group_id being holdfast's location.

-- The ledger: the source of truth. Only claims and stock adjustments write
-- available. strategy and pool_cap are per-key overrides of the client's
-- defaults (NULL means the default).
CREATE TABLE inventory_levels (
    shop_id           BIGINT      NOT NULL,
    inventory_item_id BIGINT      NOT NULL,
    location_id       BIGINT      NOT NULL,
    available         INT         NOT NULL,
    strategy          VARCHAR(16) NULL,
    pool_cap          INT         NULL,
    updated_at        DATETIME(6) NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id),
    CONSTRAINT inventory_levels_available CHECK (available >= 0),
    CONSTRAINT inventory_levels_strategy CHECK (strategy IN ('counter', 'batch', 'pool')),
    CONSTRAINT inventory_levels_pool_cap CHECK (pool_cap > 0)
) ENGINE = InnoDB;

-- One lock row per key: the per-key lock that refills, adjustments, strategy
-- changes and late claims take with SELECT … FOR UPDATE. It is
-- transaction-scoped, so a pooled connection never carries it past COMMIT
-- (GET_LOCK would be session-scoped). Created with the key's level.
CREATE TABLE inventory_locks (
    shop_id           BIGINT NOT NULL,
    inventory_item_id BIGINT NOT NULL,
    location_id       BIGINT NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
) ENGINE = InnoDB;

-- The bounded row-per-unit pool: one row is one sellable unit. The key
-- columns lead the primary key, so the rows a reservation takes with
-- SELECT … FOR UPDATE SKIP LOCKED are found and locked in the clustered
-- index alone: one row lock per unit (seed decision 1). KEY (id) only
-- satisfies InnoDB's rule for AUTO_INCREMENT columns.
CREATE TABLE reservation_units (
    shop_id           BIGINT NOT NULL,
    inventory_item_id BIGINT NOT NULL,
    location_id       BIGINT NOT NULL,
    id                BIGINT NOT NULL AUTO_INCREMENT,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, id),
    KEY reservation_units_id (id)
) ENGINE = InnoDB;

-- Counter buffers: the sellable units of a counter (or batch) key in one row.
CREATE TABLE inventory_counters (
    shop_id           BIGINT NOT NULL,
    inventory_item_id BIGINT NOT NULL,
    location_id       BIGINT NOT NULL,
    units             INT    NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id),
    CONSTRAINT inventory_counters_units CHECK (units >= 0)
) ENGINE = InnoDB;

-- One row per checkout of a shop: the hold while status = 'held', its
-- outcome record after (kept for the retention window, then purged).
CREATE TABLE holds (
    shop_id     BIGINT      NOT NULL,
    checkout_id BINARY(16)  NOT NULL,
    status      VARCHAR(10) NOT NULL,
    cart        JSON        NOT NULL, -- the lines, as JSON (LINES is a reserved word)
    created_at  DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL,
    deadline    DATETIME(6) NOT NULL,
    ended_at    DATETIME(6) NULL,
    PRIMARY KEY (shop_id, checkout_id),
    KEY holds_expiry (status, expires_at),
    KEY holds_ended (ended_at),
    CONSTRAINT holds_status CHECK (status IN ('held', 'claimed', 'released', 'expired')),
    CONSTRAINT holds_ended_at CHECK ((status = 'held') = (ended_at IS NULL))
) ENGINE = InnoDB;

-- Active holds, one row per line: exactly the units that are neither back in
-- a buffer nor claimed (expired holds included until the sweeper takes them).
-- Keyed by the inventory key first, so a key's held sum is a range read.
CREATE TABLE reserved_quantities (
    shop_id           BIGINT      NOT NULL,
    inventory_item_id BIGINT      NOT NULL,
    location_id       BIGINT      NOT NULL,
    checkout_id       BINARY(16)  NOT NULL,
    quantity          INT         NOT NULL,
    expires_at        DATETIME(6) NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, checkout_id),
    KEY reserved_quantities_checkout (shop_id, checkout_id),
    CONSTRAINT reserved_quantities_quantity CHECK (quantity > 0)
) ENGINE = InnoDB;

-- The audit trail: every change to available, append-only (the triggers
-- below reject UPDATE and DELETE; MySQL has no trigger for TRUNCATE).
CREATE TABLE inventory_ledger (
    id                BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    shop_id           BIGINT       NOT NULL,
    inventory_item_id BIGINT       NOT NULL,
    location_id       BIGINT       NOT NULL,
    delta             INT          NOT NULL,
    available_after   INT          NOT NULL,
    reason            VARCHAR(500) NOT NULL,
    reference         VARCHAR(500) NULL,
    created_at        DATETIME(6)  NOT NULL,
    KEY inventory_ledger_key (shop_id, inventory_item_id, location_id, id)
) ENGINE = InnoDB;

CREATE TRIGGER inventory_ledger_no_update BEFORE UPDATE ON inventory_ledger
FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'inventory_ledger is append-only';

CREATE TRIGGER inventory_ledger_no_delete BEFORE DELETE ON inventory_ledger
FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'inventory_ledger is append-only';

-- Outcomes of idempotent stock changes (StockChange.ID): a retry answers the
-- first outcome. request is the change as asked, to tell a retry from a
-- conflicting reuse of the id; level is the answer. Purged like hold outcomes.
CREATE TABLE stock_changes (
    shop_id    BIGINT       NOT NULL,
    change_id  VARCHAR(200) NOT NULL,
    request    JSON         NOT NULL,
    level      JSON         NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (shop_id, change_id),
    KEY stock_changes_created (created_at)
) ENGINE = InnoDB;

-- One row a client bumps (autocommitted) and then reads inside a caller's
-- transaction, to tell READ COMMITTED (sees the bump) from a snapshot
-- isolation (does not) before refilling a buffer there: InnoDB's own view
-- of a transaction's isolation (INFORMATION_SCHEMA.INNODB_TRX) is a cache
-- refreshed at most every 100 ms, and @@tx_isolation does not show SET
-- TRANSACTION.
CREATE TABLE isolation_probe (
    id TINYINT NOT NULL PRIMARY KEY,
    n  BIGINT  NOT NULL
) ENGINE = InnoDB;

INSERT INTO isolation_probe (id, n) VALUES (1, 0);
