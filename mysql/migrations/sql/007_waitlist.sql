-- The waitlist (issue #17 item 2): checkouts whose reservation was short
-- while the short keys had outstanding holds, waiting for units to come
-- back, served first-come-first-served (see mysql/waitlist.go).

-- One row per waiting (or once-waiting) checkout. seq is its place: an
-- enqueue inserts it under its cart's key lock rows, so per key seq is the
-- order in which enqueues took the key's lock. status: waiting, then held
-- (granted) or expired.
CREATE TABLE waiters (
    shop_id     BIGINT      NOT NULL,
    checkout_id BINARY(16)  NOT NULL,
    seq         BIGINT      NOT NULL AUTO_INCREMENT,
    cart        JSON        NOT NULL,
    short       JSON        NOT NULL,
    ttl_us      BIGINT      NOT NULL,
    status      VARCHAR(10) NOT NULL,
    created_at  DATETIME(6) NOT NULL,
    wait_until  DATETIME(6) NOT NULL,
    ended_at    DATETIME(6) NULL,
    PRIMARY KEY (shop_id, checkout_id),
    UNIQUE KEY waiters_seq (seq),
    KEY waiters_queue (status, seq),
    KEY waiters_deadline (status, wait_until),
    KEY waiters_shop (shop_id, status, seq),
    KEY waiters_ended (ended_at),
    CONSTRAINT waiters_status CHECK (status IN ('waiting', 'held', 'expired')),
    CONSTRAINT waiters_ended_at CHECK ((status = 'waiting') = (ended_at IS NULL))
) ENGINE = InnoDB;

-- The keys a waiting checkout is short on, while it waits: a key with a
-- row here has waiters; its buffer is emptied and not refilled.
CREATE TABLE waiter_lines (
    shop_id           BIGINT     NOT NULL,
    inventory_item_id BIGINT     NOT NULL,
    location_id       BIGINT     NOT NULL,
    seq               BIGINT     NOT NULL,
    checkout_id       BINARY(16) NOT NULL,
    quantity          INT        NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id, seq),
    KEY waiter_lines_checkout (shop_id, checkout_id),
    CONSTRAINT waiter_lines_quantity CHECK (quantity > 0)
) ENGINE = InnoDB;

-- One waitlist server pass at a time, across clients: its row is locked
-- (FOR UPDATE) for the pass.
CREATE TABLE waitlist_lock (
    id TINYINT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;
INSERT INTO waitlist_lock (id) VALUES (1);
