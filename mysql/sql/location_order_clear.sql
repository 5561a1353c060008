-- Clear a shop's default location order. ? shop.
DELETE FROM location_orders WHERE shop_id = ?
