-- Turn a key's pre-orders off (cap 0). $1 shop, $2 item, $3 location.
DELETE FROM preorders WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
