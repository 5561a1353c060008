-- End an open drop as drawn. ? now (NULL: the database's), ? shop, ? item,
-- ? location.
UPDATE drops SET state = 'drawn', drawn_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? AND state = 'open'
