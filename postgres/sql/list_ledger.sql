-- A page of a key's ledger, newest first: keyset pagination on id, read
-- backwards through inventory_ledger_key.
-- $1 shop, $2 item, $3 location, $4 cursor id (NULL: the first page; an
-- index condition either way), $5 rows.
SELECT id, delta, available_after, reason, coalesce(reference, ''), created_at
FROM inventory_ledger
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
  AND id < coalesce($4::bigint, 9223372036854775807)
ORDER BY id DESC
LIMIT $5::int
