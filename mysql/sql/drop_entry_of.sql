-- The checkout a buyer entered a drop with. ? shop, ? item, ? location,
-- ? buyer hash.
SELECT checkout_id FROM drop_entries
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? AND buyer_hash = ?
