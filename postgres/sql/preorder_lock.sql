-- A key's pre-order setting, locked (SetPreorder, under the companion
-- key's lock). $1 shop, $2 item, $3 location.
SELECT cap, expected_at FROM preorders
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
FOR UPDATE
