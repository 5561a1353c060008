-- A key's drop as anyone may read it. $1 shop, $2 item, $3 location.
SELECT d.starts_at, d.window_us, d.seed, d.state, d.drawn_at,
       (SELECT count(*) FROM drop_entries e
         WHERE e.shop_id = d.shop_id AND e.inventory_item_id = d.inventory_item_id
           AND e.location_id = d.location_id)::int
FROM drops d
WHERE d.shop_id = $1::bigint AND d.inventory_item_id = $2::bigint AND d.location_id = $3::bigint
