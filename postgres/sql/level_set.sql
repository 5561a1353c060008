-- Write a new stock level and its audit entry.
-- $1 shop, $2 item, $3 location, $4 new available, $5 delta, $6 reason, $7 reference.
WITH u AS (
    UPDATE inventory_levels
    SET available = $4::int, updated_at = clock_timestamp()
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
    RETURNING available
)
INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference)
SELECT $1::bigint, $2::bigint, $3::bigint, $5::int, u.available, $6::text, $7::text FROM u
RETURNING available_after
