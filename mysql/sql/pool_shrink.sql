-- Remove up to n pool rows of a key, waiting for rows in flight.
-- ? shop, ? item, ? location, ? n.
DELETE FROM reservation_units
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
ORDER BY id LIMIT ?
