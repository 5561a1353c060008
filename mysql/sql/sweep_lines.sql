-- Delete the picked holds' lines, found by (shop, checkout) (STRAIGHT_JOIN:
-- see take_pool_delete.sql). ? picked as JSON [[shop, checkout hex], …].
DELETE r FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
STRAIGHT_JOIN reserved_quantities r ON r.shop_id = j.shop AND r.checkout_id = UNHEX(j.id)
