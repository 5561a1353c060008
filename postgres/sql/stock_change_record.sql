-- Record a stock change under its id before applying it: the first
-- statement of an identified change, so a concurrent retry of the same id
-- waits here (on the record's key) and then finds it. No row: the id is
-- already taken. $1 shop, $2 id, $3 item, $4 location, $5 set (NULL: a
-- delta), $6 delta, $7 reason, $8 reference, $9 now.
INSERT INTO stock_changes (shop_id, change_id, inventory_item_id, location_id, set_to, delta, reason, reference, created_at)
VALUES ($1::bigint, $2::text, $3::bigint, $4::bigint, $5::int, $6::int, $7::text, $8::text,
        coalesce($9::timestamptz, clock_timestamp()))
ON CONFLICT (shop_id, change_id) DO NOTHING
RETURNING true
