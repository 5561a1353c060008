-- A key's drop row, locked to the end of the transaction, with its entry
-- count and now. $1 shop, $2 item, $3 location, $4 now (NULL: database
-- clock).
SELECT d.starts_at, d.window_us, d.seed, d.state, d.drawn_at,
       (SELECT count(*) FROM drop_entries e
         WHERE e.shop_id = d.shop_id AND e.inventory_item_id = d.inventory_item_id
           AND e.location_id = d.location_id)::int,
       coalesce($4::timestamptz, clock_timestamp())
FROM drops d
WHERE d.shop_id = $1::bigint AND d.inventory_item_id = $2::bigint AND d.location_id = $3::bigint
FOR UPDATE OF d
