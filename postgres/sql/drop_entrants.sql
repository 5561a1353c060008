-- A drawn drop's entrants in lottery order. $1 shop, $2 item, $3
-- location.
SELECT draw_rank, checkout_id, buyer_hash
FROM drop_entries
WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
  AND draw_rank IS NOT NULL
ORDER BY draw_rank
