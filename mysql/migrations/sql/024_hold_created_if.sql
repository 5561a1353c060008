-- holdfast MySQL/MariaDB schema, version 24: the per-row hold.created
-- trigger as an IF around its INSERT … VALUES, not an INSERT … SELECT
-- whose WHERE skips the holds a combined batch writes the events of
-- (migration 23): MariaDB optimised that SELECT for every hold, skipped or
-- not (issue #29 item 3; docs/PERFORMANCE.md, "MariaDB's batch
-- optimistic"). The same rows, the same skips.
--
-- The trigger is swapped with holds locked for writing (LOCK TABLES, on
-- the migration's one connection), so that no process serving the
-- database meanwhile inserts a hold between the DROP and the CREATE and
-- loses its event; its writers wait the moment the swap takes. (CREATE OR
-- REPLACE TRIGGER would swap atomically, but MySQL 8.0 has no such form.)
-- On a Galera cluster the lock holds on the migrating node only: run the
-- migration with writers on that node, or stopped.
LOCK TABLES holds WRITE;
DROP TRIGGER IF EXISTS holdfast_hold_created;
CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds FOR EACH ROW IF @holdfast_move IS NULL AND NEW.grouped_event = 0 THEN INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at) VALUES (NEW.shop_id, 'hold.created', NEW.checkout_id, NEW.cart, NEW.expires_at, NEW.created_at); END IF;
UNLOCK TABLES;
