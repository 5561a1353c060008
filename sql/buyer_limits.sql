-- The per-buyer limits of a cart's items, in item order.
-- $1 shop, $2 items.
SELECT inventory_item_id, buyer_limit, window_us
FROM buyer_limits
WHERE shop_id = $1::bigint AND inventory_item_id = ANY($2::bigint[])
ORDER BY inventory_item_id
