-- holdfast schema, version 26: the placement guard of holdfast_events
-- updates and deletes once per statement (issue #29 item 5).
--
-- Migration 25 checks a shop once per transaction: the insert trigger
-- skips a checked shop in its WHEN clause, but updates and deletes keep
-- migration 15's row trigger, a PL/pgSQL call per row — on this table the
-- sequencer's UPDATE that sets seq (every event once more) and the purge.
-- Here those two run once per statement over the statement's transition
-- table: for each distinct shop it wrote, the same two checks (the shop's
-- advisory lock class 1752139015 taken shared without waiting; no
-- holdfast_shop_fences row), raising the same HF001. AFTER the statement
-- instead of BEFORE each row: the raise rolls the statement back all the
-- same, and the lock is held from the check to the commit as before, so a
-- mover's fence still waits for the pass in flight. The UPDATE trigger
-- keeps the name holdfast_shop_guard.
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
CREATE TRIGGER holdfast_shop_guard AFTER UPDATE ON holdfast_events
    REFERENCING NEW TABLE AS holdfast_guarded_rows
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_shop_guard_statement();
CREATE TRIGGER holdfast_shop_guard_delete AFTER DELETE ON holdfast_events
    REFERENCING OLD TABLE AS holdfast_guarded_rows
    FOR EACH STATEMENT EXECUTE FUNCTION holdfast_shop_guard_statement();
