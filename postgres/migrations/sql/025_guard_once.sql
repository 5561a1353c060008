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
