-- holdfast MySQL/MariaDB schema, version 22: the in-flight marks without
-- the placement guard's triggers (issue #29 item 3; docs/PERFORMANCE.md,
-- "MariaDB's batch: the guard and the in-flight mark").
--
-- A reserve_inflight row never outlives the transaction that writes it
-- (inflight_mark and inflight_unmark, or their batch forms, insert and
-- delete it in the same transaction; only the mover, with @holdfast_move
-- set, ever finds one committed), so a move has nothing of it to copy,
-- and the guard on it fenced nothing durable. What it still did, it does
-- now without a trigger:
-- * A combined batch answers only the holds it writes, and each of them
--   is written with its guarded rows (holds, its event, its reserved
--   line) in the batch's transaction, so a fenced shop's batch is refused
--   there; a reservation the batch does not grant goes the plain way.
-- * A plain attempt may answer without a guarded write (sold out, a
--   replay, a wait): its unmark statement makes the guard's two checks
--   itself, under the mark's lock as the AFTER trigger did, and the
--   driver answers SQLSTATE HF001 when it deletes nothing
--   (mysql/inflight.go), so a stale router is still told ErrShopMoved,
--   never sold out from a source's old rows.
-- Each guard run cost about 11-14 microseconds of server CPU; a combined
-- hold ran it five times (mark, unmark, hold, event, line), now three.
DROP TRIGGER IF EXISTS reserve_inflight_guard_i;
DROP TRIGGER IF EXISTS reserve_inflight_guard_u;
DROP TRIGGER IF EXISTS reserve_inflight_guard_d;
