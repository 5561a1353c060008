-- Assign per-shop cursors to one batch of committed, unsequenced events,
-- in id order, continuing each shop's last cursor. Runs under
-- events_lock.sql, so cursors never interleave between two sequencers.
-- Returns one row: how many event rows it sequenced and how many its
-- batch counted (the same, or the caller rolls back), how many events
-- those rows are (a row of a statement's holds covers n cursors, migration
-- 28: seq is its first), and the distinct keys
-- they touched (a stock change's key, a hold event's lines' keys) for
-- events_keys.sql — derived here rather than by returning every event's
-- lines to the client to decode (a hot key's batch of 1,000 events is one
-- key).
-- $1 batch size.
WITH batch AS MATERIALIZED (
    SELECT ctid, id, shop_id, n FROM holdfast_events
    WHERE seq IS NULL
      -- a shop arriving or gone (a move, migration 15): its events are
      -- sequenced on the pod that serves it. OFFSET 0 keeps this a probe
      -- of the fences' key per pending event: as a (hash) anti-join the
      -- planner, which expects the never-analysed fences to remove most
      -- rows, read every row of holdfast_events (a parallel sequential
      -- scan and a sort, 156 ms a pass at 378,000 events) instead of the
      -- first $1 of the holdfast_events_pending index.
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holdfast_events.shop_id OFFSET 0)
      -- nor, for now, a shop a move is copying (its lock held exclusively:
      -- the guard would refuse the whole batch); the shared lock is the
      -- guard's own, as in sweep_expire.sql
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(holdfast_events.shop_id::text))
    ORDER BY id LIMIT $1::int
), counts AS (
    SELECT shop_id, sum(n) AS n FROM batch GROUP BY shop_id
), shops AS (
    INSERT INTO holdfast_event_shops AS s (shop_id, last_seq)
    SELECT shop_id, n FROM counts
    ON CONFLICT (shop_id) DO UPDATE SET last_seq = s.last_seq + excluded.last_seq
    RETURNING s.shop_id, s.last_seq
), numbered AS (
    -- a row's first cursor: the shop's cursors before this batch, plus
    -- those of the shop's rows before it in the batch, plus one
    SELECT b.ctid, b.shop_id, b.id,
           sh.last_seq - c.n + sum(b.n) OVER (PARTITION BY b.shop_id ORDER BY b.id) - b.n + 1 AS seq
    FROM batch b JOIN counts c USING (shop_id) JOIN shops sh USING (shop_id)
), sequenced AS (
    UPDATE holdfast_events e SET seq = numbered.seq
    FROM numbered
    -- the batch's rows by their ctids (a TID scan), not by a join the
    -- planner may make a hash join over a sequential scan of the table. Only this
    -- pass changes a committed event before it has its cursor, so the
    -- row is where the batch saw it; if it were not, the pass would
    -- sequence fewer events than it counted, and the caller rolls it
    -- back (the first column below against the second).
    WHERE e.ctid = ANY ((SELECT array_agg(ctid) FROM batch)::tid[])
      AND e.ctid = numbered.ctid AND e.shop_id = numbered.shop_id AND e.id = numbered.id
    RETURNING e.shop_id, e.type, e.lines, e.group_lines, e.inventory_item_id, e.location_id, e.n
), keys AS (
    SELECT shop_id, inventory_item_id AS item, location_id AS loc
    FROM sequenced
    WHERE type = 'stock.changed' AND inventory_item_id IS NOT NULL AND location_id IS NOT NULL
    UNION
    -- a hold event's lines: [{"item_id": …, "location_id": …, …}, …],
    -- a grouped row's every hold's (the distinct ones: a hot key's group
    -- is one key); an element without integral ids names no key
    SELECT s.shop_id, (l ->> 'item_id')::bigint, (l ->> 'location_id')::bigint
    FROM (SELECT DISTINCT s.shop_id, s.type, s.inventory_item_id, s.location_id, hl.lines
          FROM sequenced s,
               LATERAL (SELECT s.lines WHERE s.group_lines IS NULL
                        UNION ALL SELECT g FROM unnest(s.group_lines) g) hl(lines)) s,
         jsonb_array_elements(CASE WHEN jsonb_typeof(s.lines) = 'array' THEN s.lines END) l
    WHERE NOT (s.type = 'stock.changed' AND s.inventory_item_id IS NOT NULL AND s.location_id IS NOT NULL)
      AND jsonb_typeof(l) = 'object'
      AND (l ->> 'item_id') ~ '^-?[0-9]{1,18}$' AND (l ->> 'location_id') ~ '^-?[0-9]{1,18}$'
)
SELECT (SELECT count(*) FROM sequenced)::int, (SELECT count(*) FROM batch)::int,
       (SELECT coalesce(sum(n), 0) FROM sequenced)::int,
       coalesce(array_agg(shop_id ORDER BY shop_id, item, loc), '{}'),
       coalesce(array_agg(item ORDER BY shop_id, item, loc), '{}'),
       coalesce(array_agg(loc ORDER BY shop_id, item, loc), '{}')
FROM keys
