-- A new hold's lines, from its own record. ? shop, ? checkout.
INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
SELECT h.shop_id, j.item, j.loc, h.checkout_id, j.qty, h.expires_at
FROM holds h
CROSS JOIN JSON_TABLE(h.cart, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id',
         qty  INT    PATH '$.quantity')) j
WHERE h.shop_id = ? AND h.checkout_id = ?
