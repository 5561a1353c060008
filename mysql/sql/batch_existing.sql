-- The batch's checkouts that already have a hold or outcome.
-- ? batch as JSON [[shop, checkout hex, …], …].
SELECT HEX(h.checkout_id), h.shop_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN holds h ON h.shop_id = g.shop AND h.checkout_id = UNHEX(g.id)
