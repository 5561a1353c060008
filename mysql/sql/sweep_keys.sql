-- The distinct keys of the picked holds' lines, in key order.
-- ? picked as JSON [[shop, checkout hex], …].
SELECT DISTINCT r.shop_id, r.inventory_item_id, r.location_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT     PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
STRAIGHT_JOIN reserved_quantities r ON r.shop_id = j.shop AND r.checkout_id = UNHEX(j.id)
ORDER BY 1, 2, 3
