-- Take units across every slot of a counter or slotted key, waiting for the
-- slot locks (in slot order). Used under the key's advisory lock: by the slow
-- path of a reservation (all or nothing) and to shrink a buffer (as many as
-- there are). Returns the quantity taken.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 all or nothing.
WITH s AS MATERIALIZED (
    SELECT slot, units
    FROM inventory_counters
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
      AND units > 0
    ORDER BY slot
    FOR UPDATE
), c AS (
    SELECT slot, units, sum(units) OVER (ORDER BY slot) AS cum FROM s
), plan AS (
    SELECT slot, least(units, $4::int - (cum - units))::int AS take
    FROM c WHERE cum - units < $4::int
), ok AS (
    SELECT NOT $5::bool OR coalesce(sum(take), 0) = $4::int AS ok FROM plan
), t AS (
    UPDATE inventory_counters ic
    SET units = ic.units - plan.take
    FROM plan, ok
    WHERE ok.ok AND ic.shop_id = $1::bigint AND ic.inventory_item_id = $2::bigint
      AND ic.location_id = $3::bigint AND ic.slot = plan.slot
    RETURNING plan.take
)
SELECT coalesce(sum(take), 0)::int FROM t
