-- Queue keys for the replenisher. $1 shops, $2 items, $3 locations.
INSERT INTO replenish_queue (shop_id, inventory_item_id, location_id)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])
ORDER BY 1, 2, 3
ON CONFLICT DO NOTHING
