-- Assign per-shop cursors to one batch of committed, unsequenced events,
-- in id order, continuing each shop's last cursor. Runs under
-- events_lock.sql, so cursors never interleave between two sequencers.
-- Returns what the sequencer needs to derive key events.
-- $1 batch size.
WITH batch AS MATERIALIZED (
    SELECT id, shop_id FROM holdfast_events
    WHERE seq IS NULL
      -- a shop arriving or gone (a move, migration 15): its events are
      -- sequenced on the pod that serves it
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holdfast_events.shop_id)
      -- nor, for now, a shop a move is copying (its lock held exclusively:
      -- the guard would refuse the whole batch); the shared lock is the
      -- guard's own, as in sweep_expire.sql
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(holdfast_events.shop_id::text))
    ORDER BY id LIMIT $1::int
), counts AS (
    SELECT shop_id, count(*) AS n FROM batch GROUP BY shop_id
), shops AS (
    INSERT INTO holdfast_event_shops AS s (shop_id, last_seq)
    SELECT shop_id, n FROM counts
    ON CONFLICT (shop_id) DO UPDATE SET last_seq = s.last_seq + excluded.last_seq
    RETURNING s.shop_id, s.last_seq
), numbered AS (
    SELECT b.shop_id, b.id, sh.last_seq - c.n + row_number() OVER (PARTITION BY b.shop_id ORDER BY b.id) AS seq
    FROM batch b JOIN counts c USING (shop_id) JOIN shops sh USING (shop_id)
)
UPDATE holdfast_events e SET seq = numbered.seq
FROM numbered
WHERE e.shop_id = numbered.shop_id AND e.id = numbered.id
RETURNING e.shop_id, e.type, e.lines, e.inventory_item_id, e.location_id
