-- Remove a shop's per-buyer limit of an item. ? shop, ? item.
DELETE FROM buyer_limits WHERE shop_id = ? AND inventory_item_id = ?
