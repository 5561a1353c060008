-- A shop's default location order (no row: none). $1 shop.
SELECT locations FROM location_orders WHERE shop_id = $1::bigint
