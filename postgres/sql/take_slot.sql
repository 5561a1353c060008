-- Take units from one slot of a slotted key that has enough and that no other
-- reserver holds, starting the search at slot $5. Returns the quantity or 0.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 first slot to try, $6 strict:
-- short raises HF010 (holdfast_refuse; hold_insert.sql's $7).
WITH picked AS MATERIALIZED (
    SELECT slot
    FROM inventory_counters
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
      AND units >= $4::int
    ORDER BY slot >= $5::int DESC, slot
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), t AS (
    UPDATE inventory_counters c
    SET units = c.units - $4::int
    FROM picked p
    WHERE c.shop_id = $1::bigint AND c.inventory_item_id = $2::bigint
      AND c.location_id = $3::bigint AND c.slot = p.slot
      -- Rechecked on the row as it is now: the guard does not rely on the
      -- CTE having re-read a row updated since the statement's snapshot.
      AND c.units >= $4::int
    RETURNING 1
)
SELECT CASE WHEN $6::boolean AND count(*) = 0 THEN holdfast_refuse('short')
            ELSE (count(*) * $4::int)::int END
FROM t
