-- Which of a shop's keys have an open drop. $1 shop, $2 items, $3
-- locations.
SELECT d.inventory_item_id, d.location_id
FROM unnest($2::bigint[], $3::bigint[]) AS k(item, location)
JOIN drops d ON d.shop_id = $1::bigint AND d.inventory_item_id = k.item AND d.location_id = k.location
WHERE d.state = 'open'
ORDER BY 1, 2
