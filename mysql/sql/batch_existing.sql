-- The batch's checkouts that already have a hold or outcome, or a wait
-- (waitlist.go: the plain path answers those), after one first row that
-- carries the batch's clock reading (its id and shop NULL): the holds'
-- times are computed from it (combine.go), so nothing is read back.
-- ? now (NULL: the database clock), ? batch as JSON [[shop, checkout hex],
-- …], twice.
SELECT NULL, NULL, CAST(COALESCE(?, UTC_TIMESTAMP(6)) AS DATETIME(6))
UNION ALL
SELECT HEX(h.checkout_id), h.shop_id, NULL
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN holds h ON h.shop_id = g.shop AND h.checkout_id = UNHEX(g.id)
UNION ALL
SELECT HEX(w.checkout_id), w.shop_id, NULL
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN waiters w ON w.shop_id = g.shop AND w.checkout_id = UNHEX(g.id) AND w.status <> 'held'
