-- Move a merged checkout's reserved lines to its destination, summed per
-- key, at the destination's expiry (the delete follows: merge_lines_delete.sql).
-- ? destination checkout, ? destination checkout, ? shop, ? source checkout.
INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
SELECT r.shop_id, r.inventory_item_id, r.location_id, ?, r.quantity, d.expires_at
FROM reserved_quantities r
JOIN holds d ON d.shop_id = r.shop_id AND d.checkout_id = ?
WHERE r.shop_id = ? AND r.checkout_id = ?
ORDER BY r.inventory_item_id, r.location_id
ON DUPLICATE KEY UPDATE quantity = reserved_quantities.quantity + VALUES(quantity)
