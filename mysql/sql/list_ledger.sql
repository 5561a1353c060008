-- A page of a key's ledger, newest first: keyset pagination on id, read
-- backwards through inventory_ledger_key.
-- ? shop, ? item, ? location, ? cursor id (the first page: past every id),
-- ? rows.
SELECT id, delta, available_after, reason, COALESCE(reference, ''), created_at
FROM inventory_ledger
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
  AND id < ?
ORDER BY id DESC
LIMIT ?
