-- The waitlist (issue #17 item 2): checkouts whose reservation was short
-- while the short keys had outstanding holds, waiting for units to come
-- back, served first-come-first-served.
--
-- Lock order (docs/DESIGN.md): an enqueue takes the keys' advisory locks
-- (in key order) before it inserts its waiters row, so per key the queue
-- order (seq) is the order in which enqueues took the key's lock, and the
-- waitlist server, which reads the queue under those locks, never misses an
-- earlier waiter of a key.

-- One row per waiting (or once-waiting) checkout. status: waiting, then
-- held (granted: the checkout's hold exists with the same lines) or
-- expired (the wait ran out). Ended rows are purged after the outcome
-- retention window.
CREATE TABLE waiters (
    shop_id     bigint      NOT NULL CHECK (shop_id > 0),
    checkout_id uuid        NOT NULL,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    lines       jsonb       NOT NULL,
    short       jsonb       NOT NULL,
    ttl_us      bigint      NOT NULL CHECK (ttl_us > 0),
    status      text        NOT NULL CHECK (status IN ('waiting', 'held', 'expired')),
    created_at  timestamptz NOT NULL,
    wait_until  timestamptz NOT NULL,
    ended_at    timestamptz,
    CHECK ((status = 'waiting') = (ended_at IS NULL)),
    PRIMARY KEY (shop_id, checkout_id)
);
CREATE UNIQUE INDEX waiters_queue ON waiters (seq) WHERE status = 'waiting';
CREATE INDEX waiters_deadline ON waiters (wait_until) WHERE status = 'waiting';
CREATE INDEX waiters_ended ON waiters (ended_at) WHERE status <> 'waiting';

-- The keys a waiting checkout was short on, while it waits: a key with a
-- row here "has waiters". Its buffer is emptied when the first waiter
-- arrives and refill.sql adds nothing to it, so units coming back stay
-- unallocated for the waitlist server and no new buyer takes them.
CREATE TABLE waiter_lines (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    seq               bigint  NOT NULL,
    checkout_id       uuid    NOT NULL,
    quantity          integer NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (shop_id, inventory_item_id, location_id, seq)
);
CREATE INDEX waiter_lines_checkout ON waiter_lines (shop_id, checkout_id);
