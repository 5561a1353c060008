-- Set a shop's default location order. $1 shop, $2 locations.
INSERT INTO location_orders (shop_id, locations)
VALUES ($1::bigint, $2::bigint[])
ON CONFLICT (shop_id) DO UPDATE SET locations = EXCLUDED.locations, updated_at = clock_timestamp()
