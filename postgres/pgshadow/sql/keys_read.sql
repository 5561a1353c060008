-- The keys holdfast stocks for a shop (read only), for Reconcile.
SELECT inventory_item_id, location_id FROM inventory_levels
WHERE shop_id = $1 ORDER BY inventory_item_id, location_id LIMIT $2
