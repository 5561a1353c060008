-- holdfast MySQL/MariaDB schema, version 23: one hold.created event row per
-- shop of a combined batch (issue #29 item 2), instead of one per hold.
--
-- An event row covers n cursors: its seq is the first, and it covers seq ..
-- seq + n - 1. A row of one event (n = 1, every row before this migration
-- and every row not written by a combined batch) keeps its fields in its
-- columns. A grouped row (n > 1, hold.created only) keeps its holds in
-- grouped: a JSON array in cursor order, one element per hold,
-- [checkout id (hex), cart (JSON), expires_at ('YYYY-MM-DD hh:mm:ss.ffffff',
-- UTC)]; checkout_id, cart and expires_at are NULL and created_at is every
-- hold's (a batch creates its holds at one clock reading). The sequencer
-- advances a shop's last cursor by n; every reader expands the elements
-- (the feed, the sequencer's key events), counts cursors (a new webhook
-- endpoint's start) or waits for a row's last cursor (the purge).
ALTER TABLE holdfast_events
    ADD COLUMN n INT NOT NULL DEFAULT 1,
    ADD COLUMN grouped JSON NULL;

-- A hold whose hold.created event its writer inserts itself (a combined
-- batch: batch_holds.sql sets it, batch_events.sql writes the shop's one
-- row in the same transaction): the per-row trigger below skips it. A
-- column of the row, not a session variable: a variable left set after an
-- error would make a later plain insert lose its event.
ALTER TABLE holds ADD COLUMN grouped_event TINYINT NOT NULL DEFAULT 0;

DROP TRIGGER IF EXISTS holdfast_hold_created;
CREATE TRIGGER holdfast_hold_created AFTER INSERT ON holds
FOR EACH ROW INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
SELECT NEW.shop_id, 'hold.created', NEW.checkout_id, NEW.cart, NEW.expires_at, NEW.created_at
FROM DUAL
WHERE @holdfast_move IS NULL AND NEW.grouped_event = 0;

-- Grouping is a feature switched on once, never off: a binary from before
-- this migration reads a grouped row as one event and its sequencer gives
-- it one cursor, so a database that older processes may still serve (one
-- migrated during a rolling upgrade) keeps a row per hold until every
-- process runs this release and the operator says so (`holdfast migrate
-- --group-events`, migrations.EnableGroupedEvents). A database created by
-- this release's migrate has it from the start (migrations.go). The batch
-- reads it in the statement that marks its holds (batch_holds.sql), and
-- writes its rows only for holds so marked (batch_events.sql).
CREATE TABLE holdfast_features (
    name       VARCHAR(64) NOT NULL PRIMARY KEY,
    enabled_at DATETIME(6) NOT NULL
) ENGINE = InnoDB;
