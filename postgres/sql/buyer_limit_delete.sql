-- Remove a shop's per-buyer limit of an item. $1 shop, $2 item.
DELETE FROM buyer_limits WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint
