-- A key's drop as anyone may read it. ? shop, ? item, ? location.
SELECT d.starts_at, d.window_us, d.seed, d.state, d.drawn_at,
       (SELECT COUNT(*) FROM drop_entries e
         WHERE e.shop_id = d.shop_id AND e.inventory_item_id = d.inventory_item_id
           AND e.location_id = d.location_id)
FROM drops d
WHERE d.shop_id = ? AND d.inventory_item_id = ? AND d.location_id = ?
