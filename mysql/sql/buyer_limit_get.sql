-- A shop's per-buyer limit of an item. ? shop, ? item.
SELECT buyer_limit, window_us FROM buyer_limits
WHERE shop_id = ? AND inventory_item_id = ?
