-- Take units from a counter key's single row: the conditional update that
-- waits for the row lock. Returns the quantity taken or 0.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 strict: short raises HF010
-- (holdfast_refuse; hold_insert.sql's $7).
WITH t AS (
    UPDATE inventory_counters
    SET units = units - $4::int
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
      AND slot = 0 AND units >= $4::int
    RETURNING 1
)
SELECT CASE WHEN $5::boolean AND count(*) = 0 THEN holdfast_refuse('short')
            ELSE (count(*) * $4::int)::int END
FROM t
