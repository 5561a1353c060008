-- Delete the in-flight marks this batch just wrote (their locks stay), each
-- found by key. ? batch as JSON [[shop, checkout hex], …].
DELETE m FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
STRAIGHT_JOIN reserve_inflight m ON m.shop_id = g.shop AND m.checkout_id = UNHEX(g.id)
