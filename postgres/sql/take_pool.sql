-- Take units from the row-per-unit pool without waiting for rows other
-- reservers hold. Returns how many were taken: fewer than asked means short.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 strict: short raises HF010
-- (holdfast_refuse; hold_insert.sql's $7).
WITH picked AS (
    SELECT id
    FROM reservation_units
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
    ORDER BY id
    LIMIT $4::int
    FOR UPDATE SKIP LOCKED
), consumed AS (
    DELETE FROM reservation_units u
    USING picked p
    WHERE u.shop_id = $1::bigint AND u.inventory_item_id = $2::bigint
      AND u.location_id = $3::bigint AND u.id = p.id
    RETURNING 1
)
SELECT CASE WHEN $5::boolean AND count(*) < $4::int THEN holdfast_refuse('short')
            ELSE count(*)::int END
FROM consumed
