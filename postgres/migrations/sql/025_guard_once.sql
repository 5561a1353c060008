-- The placement guard (migration 15) checks a shop once per transaction,
-- not once per row (issue #29 item 2).
--
-- A combined batch of 32 holds wrote 32 hold rows, 32 lines and 32 event
-- rows of one shop, and the row trigger ran its full check for each: the
-- try-lock and an SPI query of holdfast_shop_fences, about a fifth of the
-- batch's backend CPU (docs/PERFORMANCE.md, "The re-thought PostgreSQL
-- batch"). The first check of a shop in a transaction now records the shop
-- in the transaction-local setting holdfast.guarded; later rows of the same
-- shop in that transaction return at once.
--
-- Why skipping is safe: the check that passed took the shop's fence lock
-- shared, held to the end of the transaction, so the mover (which takes
-- that lock exclusively before it copies, and marks the shop gone under
-- it) cannot start on this shop before this transaction ends; nothing the
-- later rows would have checked can change meanwhile. A savepoint rolled
-- back undoes the setting with the rest of its work (set_config is
-- transaction-local, and subtransaction-scoped), so a rolled-back check is
-- checked again. Rows of another shop are checked in full (the setting
-- holds the last shop checked only).
--
-- On the three tables a hold writes a row of each (holds,
-- reserved_quantities, holdfast_events) the insert guard is its own
-- trigger whose WHEN clause makes the same test, so a row of a shop already
-- checked does not even enter PL/pgSQL (a third of the remaining per-row
-- cost); updates and deletes keep the one trigger of migration 15, under its
-- name. The guard still runs before each row is written, as before.
CREATE OR REPLACE FUNCTION holdfast_shop_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s  bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.shop_id ELSE NEW.shop_id END;
    st text;
BEGIN
    IF s IS NOT NULL AND current_setting('holdfast.guarded', true) IS DISTINCT FROM s::text THEN
        IF NOT pg_try_advisory_xact_lock_shared(1752139015, hashtext(s::text)) THEN
            RAISE EXCEPTION 'shop % is fenced for a move', s USING ERRCODE = 'HF001';
        END IF;
        SELECT f.state INTO st FROM holdfast_shop_fences f WHERE f.shop_id = s;
        IF st IS NOT NULL THEN
            RAISE EXCEPTION 'shop % is %: it is being moved, or lives on another pod', s, st USING ERRCODE = 'HF001';
        END IF;
        PERFORM set_config('holdfast.guarded', s::text, true);
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['holds', 'reserved_quantities', 'holdfast_events'] LOOP
        EXECUTE format('DROP TRIGGER holdfast_shop_guard ON %I', t);
        EXECUTE format('CREATE TRIGGER holdfast_shop_guard BEFORE UPDATE OR DELETE ON %I
            FOR EACH ROW EXECUTE FUNCTION holdfast_shop_guard()', t);
        EXECUTE format('CREATE TRIGGER holdfast_shop_guard_insert BEFORE INSERT ON %I
            FOR EACH ROW WHEN (current_setting(''holdfast.guarded'', true) IS DISTINCT FROM NEW.shop_id::text)
            EXECUTE FUNCTION holdfast_shop_guard()', t);
    END LOOP;
END $$;
