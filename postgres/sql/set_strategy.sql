-- Choose a key's strategy and pool cap (NULL: the client's defaults).
-- $1 shop, $2 item, $3 location, $4 strategy, $5 pool cap.
INSERT INTO inventory_levels AS l (shop_id, inventory_item_id, location_id, available, strategy, pool_cap)
VALUES ($1::bigint, $2::bigint, $3::bigint, 0, $4::text, $5::int)
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET strategy = EXCLUDED.strategy, pool_cap = EXCLUDED.pool_cap, updated_at = clock_timestamp()
