(SELECT ? AS line, id FROM reservation_units
 WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
 ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
