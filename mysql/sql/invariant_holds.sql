-- Structural checks between holds and their lines; each row is a defect.
-- The count of a hold's lines is forced onto (shop_id, checkout_id):
-- MariaDB otherwise picked the primary key's shop_id prefix and read every
-- line of the shop per hold (quadratic: minutes at 30,000 holds).
SELECT 'line without a held checkout', r.shop_id, HEX(r.checkout_id)
FROM reserved_quantities r
LEFT JOIN holds h ON h.shop_id = r.shop_id AND h.checkout_id = r.checkout_id
WHERE h.checkout_id IS NULL OR h.status <> 'held'
UNION ALL
SELECT 'held checkout whose lines differ from its record', h.shop_id, HEX(h.checkout_id)
FROM holds h
WHERE h.status = 'held'
  AND COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r FORCE INDEX (reserved_quantities_checkout)
                WHERE r.shop_id = h.shop_id AND r.checkout_id = h.checkout_id), 0)
   <> COALESCE((SELECT SUM(j.qty) FROM JSON_TABLE(h.cart, '$[*]' COLUMNS (qty INT PATH '$.quantity')) j), 0)
