-- A key's drop row, locked to the end of the transaction, with its entry
-- count and now. ? now (NULL: the database's), ? shop, ? item, ? location.
SELECT d.starts_at, d.window_us, d.seed, d.state, d.drawn_at,
       (SELECT COUNT(*) FROM drop_entries e
         WHERE e.shop_id = d.shop_id AND e.inventory_item_id = d.inventory_item_id
           AND e.location_id = d.location_id),
       CAST(COALESCE(?, UTC_TIMESTAMP(6)) AS DATETIME(6))
FROM drops d
WHERE d.shop_id = ? AND d.inventory_item_id = ? AND d.location_id = ?
FOR UPDATE
