-- Deduct a combined batch's claimed lines (claimcombine.go) in one
-- statement: each key's inventory_levels row is locked in key order and
-- updated once by the sum of its lines, and every line gets its own ledger
-- entry, as claim_line.sql writes it, in the order given, available_after
-- running down per key. CHECK (available >= 0) fails the whole statement on
-- an over-committed key (the engine then serves each claim on its own).
-- A line whose key has no level row fails it too (the cast below, not a
-- constant, so the planner cannot fold it into an error), so the
-- COMMIT pipelined after it never commits a claim without its deduction.
-- $1 shops, $2 items, $3 locations, $4 quantities, $5 references, $6 reason.
WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::text[])
        WITH ORDINALITY AS r(shop_id, inventory_item_id, location_id, quantity, reference, n)
), k AS (
    SELECT shop_id, inventory_item_id, location_id, sum(quantity)::int AS total
    FROM r GROUP BY shop_id, inventory_item_id, location_id
), l AS (
    SELECT v.shop_id, v.inventory_item_id, v.location_id
    FROM inventory_levels v
    JOIN k ON v.shop_id = k.shop_id AND v.inventory_item_id = k.inventory_item_id AND v.location_id = k.location_id
    ORDER BY v.shop_id, v.inventory_item_id, v.location_id
    FOR UPDATE OF v
), u AS (
    UPDATE inventory_levels v
    SET available = v.available - k.total, updated_at = clock_timestamp()
    FROM k JOIN l ON l.shop_id = k.shop_id AND l.inventory_item_id = k.inventory_item_id AND l.location_id = k.location_id
    WHERE v.shop_id = k.shop_id AND v.inventory_item_id = k.inventory_item_id AND v.location_id = k.location_id
    RETURNING v.shop_id, v.inventory_item_id, v.location_id, v.available + k.total AS before
), g AS (
    INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference, claim)
    SELECT r.shop_id, r.inventory_item_id, r.location_id, -r.quantity,
           (u.before - sum(r.quantity) OVER (PARTITION BY r.shop_id, r.inventory_item_id, r.location_id ORDER BY r.n))::int,
           $6::text, r.reference, true
    FROM r JOIN u ON u.shop_id = r.shop_id AND u.inventory_item_id = r.inventory_item_id AND u.location_id = r.location_id
    ORDER BY r.n
    RETURNING 1
)
SELECT CASE WHEN count(*) = cardinality($1::bigint[]) THEN count(*)::int
            ELSE ('claimed line has no inventory level: ' || count(*))::int END
FROM g
