-- holdfast schema, version 15: moving a shop between pods (issue #28,
-- package pods: `holdfast pods move`).
--
-- 1. Keys that include shop_id. A move copies a shop's rows, ids and all,
--    into another pod, whose own shops used the same ids (every pod's
--    sequences start at 1): the tables keyed by id alone get (shop_id, id).
--    After a copy the target's sequences are advanced past the copied ids
--    (setval greatest), so a shop's ids keep growing across a move. SQL
--    that addressed these rows by id alone now says shop_id too
--    (events_sequence.sql, purge_events.sql).
--    Not re-keyed: webhook_endpoints, webhook_dead_letters and the shadow
--    tables keyed by id; a move refuses a shop with rows there (see
--    docs/PODS.md).
ALTER TABLE reserved_quantities DROP CONSTRAINT reserved_quantities_pkey,
    ADD CONSTRAINT reserved_quantities_pkey PRIMARY KEY (shop_id, id);
ALTER TABLE inventory_ledger DROP CONSTRAINT inventory_ledger_pkey,
    ADD CONSTRAINT inventory_ledger_pkey PRIMARY KEY (shop_id, id);
ALTER TABLE holdfast_events DROP CONSTRAINT holdfast_events_pkey,
    ADD CONSTRAINT holdfast_events_pkey PRIMARY KEY (shop_id, id);
-- The waitlist's queue order: seq values copied from another pod may equal
-- this pod's own, so the index orders without claiming uniqueness (the
-- order within a shop is what the waitlist serves by).
DROP INDEX waiters_queue;
CREATE INDEX waiters_queue ON waiters (seq) WHERE status = 'waiting';

-- 2. The placement guard. A shop fenced here (a move in progress, or moved
--    away) has its writes refused with SQLSTATE HF001, which the engine
--    answers holdfast.ErrShopMoved (nothing applied; retry). Two signals:
--    * while a move copies the shop, the mover holds the shop's advisory
--      lock (class 1752139015) exclusively: a write takes it shared
--      without waiting, so the mover's request waits for the writes in
--      flight and every later write is refused at once;
--    * holdfast_shop_fences marks a shop arriving here ('incoming': copied,
--      not yet switched) or gone ('gone': moved away; its rows are purged).
--    Rows written with session_replication_role = replica (the move's own
--    copy and purge) bypass it, as they bypass every trigger.
CREATE TABLE holdfast_shop_fences (
    shop_id   bigint      PRIMARY KEY CHECK (shop_id > 0),
    state     text        NOT NULL CHECK (state IN ('incoming', 'gone')),
    pod       text        NOT NULL DEFAULT '', -- the other pod of the move
    since     timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION holdfast_shop_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s  bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.shop_id ELSE NEW.shop_id END;
    st text;
BEGIN
    IF s IS NOT NULL THEN
        IF NOT pg_try_advisory_xact_lock_shared(1752139015, hashtext(s::text)) THEN
            RAISE EXCEPTION 'shop % is fenced for a move', s USING ERRCODE = 'HF001';
        END IF;
        SELECT f.state INTO st FROM holdfast_shop_fences f WHERE f.shop_id = s;
        IF st IS NOT NULL THEN
            RAISE EXCEPTION 'shop % is %: it is being moved, or lives on another pod', s, st USING ERRCODE = 'HF001';
        END IF;
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;

-- Every table holding a shop's rows, partitioned ones at their root (the
-- trigger is cloned onto the partitions).
DO $$
DECLARE t text;
BEGIN
    FOR t IN
        SELECT c.relname FROM pg_class c
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'shop_id' AND NOT a.attisdropped
        WHERE c.relnamespace = current_schema()::regnamespace
          AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND c.relname NOT IN ('api_keys', 'holdfast_shop_fences')
        ORDER BY c.relname
    LOOP
        EXECUTE format('CREATE TRIGGER holdfast_shop_guard BEFORE INSERT OR UPDATE OR DELETE ON %I
            FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard()', t);
    END LOOP;
END $$;
