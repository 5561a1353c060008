-- Deduct a claimed line from the ledger; 0 rows affected means the key
-- lacks the stock (over-committed) or does not exist.
-- ? q, ? now, ? shop, ? item, ? location, ? q.
UPDATE inventory_levels SET available = available - ?, updated_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? AND available >= ?
