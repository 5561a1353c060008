-- Take units from one counter row of a batch key (one row per combiner
-- stripe, strategies.go): the row of stripe $5 when it has enough, else
-- another that has; like take_counter.sql it waits for the row's lock
-- rather than skip it (take_slot.sql skips: with a slotted key's many rows
-- there is nearly always a free one, with a batch key's two there is
-- not, and a skipped take goes the slow way). The guard is rechecked on
-- the row as it is once its lock is had. Returns the quantity or 0.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 stripe to try first,
-- $6 strict: short raises HF010 (holdfast_refuse; hold_insert.sql's $7).
WITH picked AS MATERIALIZED (
    SELECT slot
    FROM inventory_counters
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
      AND units >= $4::int
    ORDER BY slot = $5::int DESC, slot
    LIMIT 1
), t AS (
    UPDATE inventory_counters c
    SET units = c.units - $4::int
    FROM picked p
    WHERE c.shop_id = $1::bigint AND c.inventory_item_id = $2::bigint
      AND c.location_id = $3::bigint AND c.slot = p.slot
      AND c.units >= $4::int
    RETURNING 1
)
SELECT CASE WHEN $6::boolean AND count(*) = 0 THEN holdfast_refuse('short')
            ELSE (count(*) * $4::int)::int END
FROM t
