-- Replace a shop's per-buyer limit of an item. ? limit, ? window µs, ? now,
-- ? shop, ? item.
UPDATE buyer_limits SET buyer_limit = ?, window_us = ?, updated_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND inventory_item_id = ?
