-- The stock change recorded under an id. $1 shop, $2 id.
SELECT inventory_item_id, location_id, set_to, delta, reason, coalesce(reference, ''), outcome
FROM stock_changes
WHERE shop_id = $1::bigint AND change_id = $2::text
