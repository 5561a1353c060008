-- The batch's checkouts that already have a hold or outcome, or a wait
-- (waitlist.go: the plain path answers those).
-- ? batch as JSON [[shop, checkout hex, …], …], twice.
SELECT HEX(h.checkout_id), h.shop_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN holds h ON h.shop_id = g.shop AND h.checkout_id = UNHEX(g.id)
UNION
SELECT HEX(w.checkout_id), w.shop_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN waiters w ON w.shop_id = g.shop AND w.checkout_id = UNHEX(g.id) AND w.status <> 'held'
