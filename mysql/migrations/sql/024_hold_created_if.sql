-- holdfast MySQL/MariaDB schema, version 24: the per-row hold.created
-- trigger as an IF around its INSERT … VALUES, not an INSERT … SELECT
-- whose WHERE skips the holds a combined batch writes the events of
-- (migration 23): MariaDB optimised that SELECT for every hold, skipped or
-- not (issue #29 item 3; docs/PERFORMANCE.md, "MariaDB's batch
-- optimistic"). The same rows, the same skips.
DROP TRIGGER IF EXISTS holdfast_hold_created;
CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds FOR EACH ROW IF @holdfast_move IS NULL AND NEW.grouped_event = 0 THEN INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at) VALUES (NEW.shop_id, 'hold.created', NEW.checkout_id, NEW.cart, NEW.expires_at, NEW.created_at); END IF;
