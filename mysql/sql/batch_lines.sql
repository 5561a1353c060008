-- The lines of the holds a combined batch created, from their records.
-- ? granted as JSON [[shop, checkout hex, …], …].
INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
SELECT h.shop_id, j.item, j.loc, h.checkout_id, j.qty, h.expires_at
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN holds h ON h.shop_id = g.shop AND h.checkout_id = UNHEX(g.id)
CROSS JOIN JSON_TABLE(h.cart, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id',
         qty  INT    PATH '$.quantity')) j
