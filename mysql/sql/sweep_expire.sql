-- Expire the picked holds, each found by its primary key (STRAIGHT_JOIN:
-- see take_pool_delete.sql). ? picked as JSON [[shop, checkout hex], …],
-- ? now.
UPDATE JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
STRAIGHT_JOIN holds h
  ON h.shop_id = j.shop AND h.checkout_id = UNHEX(j.id)
SET h.status = 'expired', h.ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE h.status = 'held'
