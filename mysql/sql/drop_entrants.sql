-- A drawn drop's entrants in lottery order. ? shop, ? item, ? location.
SELECT draw_rank, checkout_id, buyer_hash
FROM drop_entries
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? AND draw_rank IS NOT NULL
ORDER BY draw_rank
