-- Set a key's safety stock (its level row exists). ? safety, ? now,
-- ? shop, ? item, ? location.
UPDATE inventory_levels SET safety = ?, updated_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
