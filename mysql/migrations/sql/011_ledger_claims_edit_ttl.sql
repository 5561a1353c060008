-- holdfast MySQL/MariaDB schema, version 11 (issue #24 item 6): a claim's
-- ledger entry says it is one, and a hold keeps the TTL of the edit that
-- made its revision.
--
-- inventory_ledger.claim marks the entries a claim writes
-- (ledger_lines.sql): they are hold.claimed events, every other entry is a
-- stock.changed event. The trigger used to tell them apart by reason and
-- reference, so a stock change with reason 'claim' naming a claimed
-- checkout wrote no event. During a rolling upgrade an older binary's
-- claim entries are unmarked and report a stock.changed event too (an
-- extra event, never a missing one).
--
-- holds.edit_ttl is the TTL in microseconds the edit that made the hold's
-- revision carried (0: it kept the expiry); NULL while no edit made it.
-- An edit naming the current revision is a retry only with the same lines
-- and the same TTL.
--
-- Both are instant column additions (appended, constant default).
ALTER TABLE inventory_ledger ADD COLUMN claim BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE holds ADD COLUMN edit_ttl BIGINT NULL;
DROP TRIGGER IF EXISTS holdfast_stock_changed;
CREATE TRIGGER holdfast_stock_changed AFTER INSERT ON inventory_ledger
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, delta, available, reason, reference, created_at)
SELECT NEW.shop_id, 'stock.changed', NEW.inventory_item_id, NEW.location_id, NEW.delta, NEW.available_after, NEW.reason, NEW.reference, NEW.created_at
FROM DUAL
WHERE NOT NEW.claim;
