-- The checkout a buyer entered a drop with. $1 shop, $2 item, $3
-- location, $4 buyer hash.
SELECT checkout_id FROM drop_entries
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
  AND buyer_hash = $4::bytea
