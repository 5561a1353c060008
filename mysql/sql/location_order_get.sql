-- A shop's default location order, as JSON (no row: none). ? shop.
SELECT locations FROM location_orders WHERE shop_id = ?
