-- holdfast schema, version 26: the placement guard of holdfast_events
-- once per statement (issue #29 item 5).
--
-- Migration 15's guard is a row trigger: every event row written paid a
-- PL/pgSQL call, an advisory try-lock and a fence probe — the hot key's
-- combined batch once per hold (its holds' events are one INSERT … SELECT,
-- holdfast_holds_created) and the sequencer once more per event (the UPDATE
-- that sets seq): about 10 µs of backend time per row each, measured with
-- EXPLAIN ANALYZE on a 1,000-event sequencer pass (docs/PERFORMANCE.md,
-- "The service path (issue #29 item 5), 2026-12-03"). Here the guard of
-- this table runs once per statement over its transition table: for each
-- distinct shop the statement wrote, the same two checks as the row guard
-- (the shop's advisory lock class 1752139015 taken shared without waiting;
-- no holdfast_shop_fences row), raising the same HF001. It runs AFTER the
-- statement instead of BEFORE each row: the raise rolls the statement back
-- all the same, and the lock is held from the check to the commit as
-- before, so a mover's fence (pg_advisory_lock exclusive) still waits for
-- the events in flight and every later write is refused. The INSERT
-- trigger keeps the name holdfast_shop_guard (pgmove's checks find every
-- shop table's guard by that name).
CREATE FUNCTION holdfast_shop_guard_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s  bigint;
    st text;
BEGIN
    FOR s IN SELECT DISTINCT shop_id FROM holdfast_guarded_rows WHERE shop_id IS NOT NULL ORDER BY 1 LOOP
        IF NOT pg_try_advisory_xact_lock_shared(1752139015, hashtext(s::text)) THEN
            RAISE EXCEPTION 'shop % is fenced for a move', s USING ERRCODE = 'HF001';
        END IF;
        SELECT f.state INTO st FROM holdfast_shop_fences f WHERE f.shop_id = s;
        IF st IS NOT NULL THEN
            RAISE EXCEPTION 'shop % is %: it is being moved, or lives on another pod', s, st USING ERRCODE = 'HF001';
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

DROP TRIGGER holdfast_shop_guard ON holdfast_events;
CREATE TRIGGER holdfast_shop_guard AFTER INSERT ON holdfast_events
    REFERENCING NEW TABLE AS holdfast_guarded_rows
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_shop_guard_statement();
CREATE TRIGGER holdfast_shop_guard_update AFTER UPDATE ON holdfast_events
    REFERENCING NEW TABLE AS holdfast_guarded_rows
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_shop_guard_statement();
CREATE TRIGGER holdfast_shop_guard_delete AFTER DELETE ON holdfast_events
    REFERENCING OLD TABLE AS holdfast_guarded_rows
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_shop_guard_statement();
