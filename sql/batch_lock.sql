-- Lock a counter key's row for a combined batch of reservations and return
-- its units (0 when the row does not exist yet). $1 shop, $2 item, $3 location.
SELECT coalesce((
    SELECT units FROM inventory_counters
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint AND slot = 0
    FOR UPDATE), 0)::int
