-- Create the holds a combined batch granted and take their units from the
-- counter rows the batch holds locked (sql/batch_lock.sql). Holds are created
-- in (shop, checkout) order, skipping checkouts that already have a hold or an
-- outcome, or a wait (waitlist.go: the plain path answers those); each counter gives exactly the units of the holds created.
-- Returns the holds created.
-- $1 checkouts, $2 quantities, $3 ttls µs, $4 shops, $5 items, $6 locations,
-- $7 lifetime µs, $8 now (NULL: database clock), $9 the batch's stripe
-- (its counter rows, batch_lock.sql), $10 shops, $11 items, $12 locations:
-- the shallow keys, whose every row the batch holds. The arrays are read through
-- subqueries so that a custom plan cannot see their length and the cached
-- generic plan serves every batch (as batch_lock.sql).
WITH g AS (
    SELECT *
    FROM unnest((SELECT $1::uuid[]), (SELECT $2::int[]), (SELECT $3::bigint[]),
                (SELECT $4::bigint[]), (SELECT $5::bigint[]), (SELECT $6::bigint[]))
         AS g(checkout_id, qty, ttl_us, shop_id, item, location)
), h AS (
    INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
    SELECT g.checkout_id, g.shop_id, 'held',
           jsonb_build_array(jsonb_build_object('item_id', g.item, 'location_id', g.location, 'quantity', g.qty)),
           t.now, t.now + g.ttl_us * interval '1 microsecond', t.now + $7::bigint * interval '1 microsecond'
    FROM g, (SELECT coalesce($8::timestamptz, clock_timestamp()) AS now) t,
         -- each checkout's in-flight lock, as hold_insert.sql takes it (one
         -- lock-table entry per hold: up to CombineBatchMax = 256 for one
         -- batch, within PostgreSQL's shared table of
         -- max_locks_per_transaction × max_connections entries)
         LATERAL (SELECT pg_advisory_xact_lock_shared(1752132719, hashtext(g.checkout_id::text))) inflight
    WHERE NOT EXISTS (SELECT 1 FROM waiters w
                      WHERE w.shop_id = g.shop_id AND w.checkout_id = g.checkout_id AND w.status <> 'held')
    ORDER BY g.shop_id, g.checkout_id
    ON CONFLICT (shop_id, checkout_id) DO NOTHING
    RETURNING checkout_id, shop_id, created_at, expires_at, deadline,
              (lines -> 0 ->> 'item_id')::bigint AS item,
              (lines -> 0 ->> 'location_id')::bigint AS location,
              (lines -> 0 ->> 'quantity')::int AS qty
), l AS (
    INSERT INTO reserved_quantities
        (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
    SELECT h.shop_id, h.item, h.location, h.checkout_id, h.qty, h.expires_at, h.created_at FROM h
    RETURNING 1
), d AS (
    -- Each key's units off its locked rows: the stripe's row of a deep
    -- key; a shallow key's rows ($10–$12) in slot order, each giving what
    -- it has until the total is taken, the last whatever is left — so the
    -- takes always add up to the total, and rows short of it (never, as
    -- the batch granted from these rows) fail units' CHECK and the whole
    -- batch rather than leave holds without their units. The rows are this
    -- transaction's (locked by batch_lock.sql), so this statement reads
    -- them as they are.
    SELECT c.shop_id, c.inventory_item_id, c.location_id, c.slot,
           CASE WHEN lead(c.slot) OVER w IS NULL THEN s.total - coalesce(sum(c.units) OVER before, 0)
                ELSE least(c.units, s.total - coalesce(sum(c.units) OVER before, 0)) END AS take
    FROM (SELECT shop_id, item, location, sum(qty) AS total FROM h GROUP BY 1, 2, 3) s
    JOIN inventory_counters c
      ON c.shop_id = s.shop_id AND c.inventory_item_id = s.item AND c.location_id = s.location
    WHERE c.slot = $9::int
       OR (s.shop_id, s.item, s.location) IN (
              SELECT * FROM unnest((SELECT $10::bigint[]), (SELECT $11::bigint[]), (SELECT $12::bigint[])))
    WINDOW w AS (PARTITION BY c.shop_id, c.inventory_item_id, c.location_id ORDER BY c.slot),
           before AS (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), u AS (
    UPDATE inventory_counters ic
    SET units = ic.units - d.take
    FROM d
    WHERE ic.shop_id = d.shop_id AND ic.inventory_item_id = d.inventory_item_id
      AND ic.location_id = d.location_id AND ic.slot = d.slot AND d.take > 0
    RETURNING 1
)
SELECT shop_id, checkout_id, created_at, expires_at, deadline FROM h
