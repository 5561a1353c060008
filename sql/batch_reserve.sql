-- A combined batch of one-line reservations on one counter key, in one
-- statement (and so, in autocommit, one transaction): lock the key's counter
-- row, grant requests in order while their running total fits its units,
-- create the granted holds (in checkout order, skipping checkouts that
-- already have a hold or an outcome), and take from the counter exactly the
-- units of the holds created. Requests not returned are answered on the
-- plain path: short (refill or sold out) or already existing.
-- $1 checkouts, $2 quantities, $3 ttls µs, $4 shop, $5 item, $6 location,
-- $7 lifetime µs, $8 now (NULL: database clock).
WITH c AS MATERIALIZED (
    SELECT units FROM inventory_counters
    WHERE shop_id = $4::bigint AND inventory_item_id = $5::bigint AND location_id = $6::bigint AND slot = 0
    FOR UPDATE
), r AS (
    SELECT r.*, sum(r.qty) OVER (ORDER BY r.n) AS cum
    FROM unnest($1::uuid[], $2::int[], $3::bigint[]) WITH ORDINALITY AS r(checkout_id, qty, ttl_us, n)
), h AS (
    INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
    SELECT r.checkout_id, $4::bigint, 'held',
           jsonb_build_array(jsonb_build_object('item_id', $5::bigint, 'location_id', $6::bigint, 'quantity', r.qty)),
           t.now, t.now + r.ttl_us * interval '1 microsecond', t.now + $7::bigint * interval '1 microsecond'
    FROM r, c, (SELECT coalesce($8::timestamptz, clock_timestamp()) AS now) t
    WHERE r.cum <= c.units
    ORDER BY r.checkout_id
    ON CONFLICT (checkout_id) DO NOTHING
    RETURNING checkout_id, created_at, expires_at, deadline, (lines -> 0 ->> 'quantity')::int AS qty
), l AS (
    INSERT INTO reserved_quantities
        (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
    SELECT $4::bigint, $5::bigint, $6::bigint, h.checkout_id, h.qty, h.expires_at, h.created_at FROM h
    RETURNING 1
), u AS (
    UPDATE inventory_counters
    SET units = units - (SELECT sum(qty) FROM h)
    WHERE shop_id = $4::bigint AND inventory_item_id = $5::bigint AND location_id = $6::bigint AND slot = 0
      AND EXISTS (SELECT 1 FROM h)
    RETURNING 1
)
SELECT checkout_id, created_at, expires_at, deadline, qty FROM h
