-- holdfast schema, version 28: the holds one statement creates in a shop
-- are ONE event row (issue #29 item 2).
--
-- Before, a combined batch of N holds wrote N holdfast_events rows, each
-- with its two index entries, and the sequencer then rewrote each of them
-- to give it its cursor (three more index entries): per hold, about a
-- fifth of the hot key's backend CPU. Now the holds one INSERT creates in
-- a shop at one instant are one row covering n cursors: seq is the row's
-- FIRST cursor, and it covers seq .. seq + n - 1, its holds in
-- group_checkouts order. The feed (events_read.sql) expands a row into
-- its events, so a reader sees exactly what it saw before: one
-- hold.created per hold, each with its own cursor. A row of one hold keeps
-- the old shape (n = 1, checkout_id, lines and expires_at set, the group
-- arrays NULL), so every other writer of events is unchanged and an
-- allocated hold's events are still rewritten in place
-- (alloc_hold_events.sql).
ALTER TABLE holdfast_events
    ADD COLUMN n integer NOT NULL DEFAULT 1,
    ADD COLUMN group_checkouts uuid[],
    ADD COLUMN group_lines jsonb[],
    ADD COLUMN group_expires timestamptz[];

-- Grouping is a feature switched on once, never off: a binary from before
-- this migration reads a grouped row as one event, and its sequencer gives
-- it one cursor, so a database that older processes may still serve (one
-- migrated during a rolling upgrade) keeps writing a row per hold until
-- every process runs this release and the operator says so (`holdfast
-- migrate --group-events`, migrations.EnableGroupedEvents). A database
-- created by this release's migrate has it from the start (migrate.go).
CREATE TABLE holdfast_features (
    name       text        PRIMARY KEY,
    enabled_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Grouped by (shop, created_at): the holds a batch creates share its
-- instant; holds of one statement at different instants stay apart, so a
-- row's created_at is every one of its events' time.
CREATE OR REPLACE FUNCTION holdfast_holds_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One hold (every plain reservation), or grouping off: a row per hold,
    -- as before this migration, without the aggregates.
    IF NOT EXISTS (SELECT 1 FROM holdfast_new_holds OFFSET 1)
       OR NOT EXISTS (SELECT 1 FROM holdfast_features WHERE name = 'grouped_events') THEN
        INSERT INTO holdfast_events (shop_id, type, checkout_id, lines, expires_at, created_at)
        SELECT shop_id, 'hold.created', checkout_id, lines, expires_at, created_at FROM holdfast_new_holds;
        RETURN NULL;
    END IF;
    INSERT INTO holdfast_events (shop_id, type, checkout_id, lines, expires_at, created_at,
                                 n, group_checkouts, group_lines, group_expires)
    SELECT shop_id, 'hold.created',
           CASE WHEN n = 1 THEN c[1] END, CASE WHEN n = 1 THEN l[1] END, CASE WHEN n = 1 THEN e[1] END,
           created_at, n,
           CASE WHEN n > 1 THEN c END, CASE WHEN n > 1 THEN l END, CASE WHEN n > 1 THEN e END
    FROM (SELECT shop_id, created_at, count(*)::int AS n,
                 array_agg(checkout_id ORDER BY checkout_id) AS c,
                 array_agg(lines ORDER BY checkout_id) AS l,
                 array_agg(expires_at ORDER BY checkout_id) AS e
          FROM holdfast_new_holds
          GROUP BY shop_id, created_at) g;
    RETURN NULL;
END $$;
