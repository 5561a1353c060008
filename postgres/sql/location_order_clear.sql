-- Clear a shop's default location order. $1 shop.
DELETE FROM location_orders WHERE shop_id = $1::bigint
