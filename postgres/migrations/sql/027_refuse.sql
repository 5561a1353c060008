-- holdfast schema, version 27: holdfast_refuse, the error a pipelined
-- statement raises to stop the statements queued after it (issue #29
-- item 4).
--
-- A reservation inside a caller's transaction sends SAVEPOINT, the hold
-- row, the takes, the lines and RELEASE in one round trip (reserve.go,
-- reserveTxPipelined). The lines and the RELEASE must not run when the
-- hold row was not created (a replay, a conflict, a wait) or a take came
-- up short: those statements then call this function, whose error makes
-- the server skip the rest of the pipeline; the driver rolls back to the
-- savepoint and answers the reservation the long way. HF010 is never a
-- user's answer: the driver catches it in the same attempt.
CREATE FUNCTION holdfast_refuse(reason text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'holdfast: %', reason USING ERRCODE = 'HF010';
END $$;
