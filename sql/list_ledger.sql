-- A page of a key's ledger, newest first: keyset pagination on id, read
-- backwards through inventory_ledger_key.
-- $1 shop, $2 item, $3 location, $4 cursor id (NULL: the first page), $5 rows.
SELECT id, delta, available_after, reason, coalesce(reference, ''), created_at
FROM inventory_ledger
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
  AND ($4::bigint IS NULL OR id < $4::bigint)
ORDER BY id DESC
LIMIT $5::int
