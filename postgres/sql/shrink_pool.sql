-- Remove up to $4 units from a key's pool, waiting for rows in-flight
-- reservers hold (a row they delete meanwhile is skipped, not counted).
-- Used under the key's advisory lock. $1 shop, $2 item, $3 location, $4 units.
WITH picked AS (
    SELECT id FROM reservation_units
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
    ORDER BY id
    LIMIT $4::int
    FOR UPDATE
), d AS (
    DELETE FROM reservation_units u USING picked p
    WHERE u.shop_id = $1::bigint AND u.inventory_item_id = $2::bigint
      AND u.location_id = $3::bigint AND u.id = p.id
    RETURNING 1
)
SELECT count(*)::int FROM d
