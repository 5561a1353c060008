-- The created holds' times. ? granted as JSON [[shop, checkout hex, …], …].
SELECT HEX(h.checkout_id), h.shop_id, h.created_at, h.expires_at, h.deadline
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN holds h ON h.shop_id = g.shop AND h.checkout_id = UNHEX(g.id)
