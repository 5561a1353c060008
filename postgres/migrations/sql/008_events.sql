-- holdfast schema, version 8: durable events (issue #17 item 1) and the
-- webhook registry of holdfast serve.
--
-- Every state change writes its event in the same transaction, by the
-- triggers below: there is no separate write to lose. An event gets its id
-- on insert; its per-shop cursor (seq) is assigned later by the sequencer
-- (one at a time across processes, holdfast_event_sequence below), in the
-- order it sees committed events, so a reader paging with after=cursor
-- never misses an event that committed late. The feed returns only
-- sequenced events.

CREATE TABLE holdfast_events (
    id          bigserial   PRIMARY KEY,
    shop_id     bigint      NOT NULL,
    seq         bigint,     -- the per-shop cursor; NULL until sequenced
    type        text        NOT NULL CHECK (type ~ '^[a-z_]+\.[a-z_]+$'),
    checkout_id uuid,
    lines       jsonb,      -- hold events: the hold's lines
    expires_at  timestamptz,
    inventory_item_id bigint, -- stock and key events: the key
    location_id bigint,
    delta       integer,
    available   integer,
    reason      text,
    reference   text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE UNIQUE INDEX holdfast_events_feed ON holdfast_events (shop_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX holdfast_events_pending ON holdfast_events (id) WHERE seq IS NULL;
CREATE INDEX holdfast_events_created ON holdfast_events (created_at) WHERE seq IS NOT NULL;

-- Each shop's last assigned cursor. Written only by the sequencer.
CREATE TABLE holdfast_event_shops (
    shop_id  bigint PRIMARY KEY,
    last_seq bigint NOT NULL
);

-- Derived key events (sold out / back in stock): the state the sequencer
-- last reported per key.
CREATE TABLE holdfast_event_keys (
    shop_id           bigint  NOT NULL,
    inventory_item_id bigint  NOT NULL,
    location_id       bigint  NOT NULL,
    sold_out          boolean NOT NULL,
    PRIMARY KEY (shop_id, inventory_item_id, location_id)
);

-- Hold lifecycle: created on insert; claimed / released / expired on a
-- status change; edited when the lines change while held; extended when
-- the expiry moves. One event per row change.
CREATE FUNCTION holdfast_hold_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t  text;
    at timestamptz;
BEGIN
    IF TG_OP = 'INSERT' THEN
        t := 'hold.created';
        at := NEW.created_at;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        t := 'hold.' || NEW.status;
        at := coalesce(NEW.ended_at, clock_timestamp());
    ELSIF NEW.lines IS DISTINCT FROM OLD.lines THEN
        t := 'hold.edited';
        at := clock_timestamp();
    ELSE
        t := 'hold.extended';
        at := clock_timestamp();
    END IF;
    INSERT INTO holdfast_events (shop_id, type, checkout_id, lines, expires_at, created_at)
    VALUES (NEW.shop_id, t, NEW.checkout_id, NEW.lines, NEW.expires_at, at);
    RETURN NULL;
END $$;

-- Holds created: one statement-level trigger over the statement's new rows
-- (a transition table), so a combined batch that inserts many holds in one
-- statement writes its events with one INSERT … SELECT instead of one
-- PL/pgSQL call per hold: per row, that cost about a quarter of the hot
-- key's batch throughput (`holdfast bench --scenarios hot --strategies
-- batch --clients 64`, 2026-11-30, docs/PERFORMANCE.md).
CREATE FUNCTION holdfast_holds_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO holdfast_events (shop_id, type, checkout_id, lines, expires_at, created_at)
    SELECT shop_id, 'hold.created', checkout_id, lines, expires_at, created_at FROM holdfast_new_holds;
    RETURN NULL;
END $$;

CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds
    REFERENCING NEW TABLE AS holdfast_new_holds
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_holds_created();
CREATE TRIGGER holdfast_hold_changed AFTER UPDATE ON holds
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lines IS DISTINCT FROM NEW.lines
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION holdfast_hold_event();

-- Stock: every audit entry but a claim's deduction (that is hold.claimed)
-- is a stock.changed event with the delta and the level after it.
CREATE FUNCTION holdfast_stock_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.reason IN ('claim', 'claim-after-expiry')
       AND NEW.reference ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
       AND EXISTS (SELECT 1 FROM holds h
                   WHERE h.shop_id = NEW.shop_id AND h.checkout_id = NEW.reference::uuid
                     AND h.status = 'claimed') THEN
        RETURN NULL;
    END IF;
    INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, reference, created_at)
    VALUES (NEW.shop_id, 'stock.changed', NEW.inventory_item_id, NEW.location_id, NEW.delta,
            NEW.available_after, NEW.reason, NEW.reference, NEW.created_at);
    RETURN NULL;
END $$;

CREATE TRIGGER holdfast_stock_changed AFTER INSERT ON inventory_ledger
    FOR EACH ROW EXECUTE FUNCTION holdfast_stock_event();

-- Webhook endpoints of holdfast serve, per shop, registered by the shop's
-- admin. cursor is the last event delivered (or dead-lettered); the
-- delivery pool leases an endpoint (leased_until) so one process at a time
-- delivers it, in cursor order.
CREATE TABLE webhook_endpoints (
    id           bigserial   PRIMARY KEY,
    shop_id      bigint      NOT NULL CHECK (shop_id > 0),
    url          text        NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    secret       text        NOT NULL,
    cursor       bigint      NOT NULL DEFAULT 0,
    attempts     integer     NOT NULL DEFAULT 0,
    next_at      timestamptz,
    first_failed_at timestamptz,
    last_error   text,
    leased_until timestamptz,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_endpoints_shop ON webhook_endpoints (shop_id, id);

-- Events an endpoint did not accept within the retry horizon.
CREATE TABLE webhook_dead_letters (
    id           bigserial   PRIMARY KEY,
    endpoint_id  bigint      NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    shop_id      bigint      NOT NULL,
    cursor       bigint      NOT NULL,
    event        jsonb       NOT NULL,
    attempts     integer     NOT NULL,
    last_error   text        NOT NULL,
    dead_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (endpoint_id, cursor)
);
CREATE INDEX webhook_dead_letters_shop ON webhook_dead_letters (shop_id, id);
