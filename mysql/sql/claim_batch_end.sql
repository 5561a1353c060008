-- Claim the picked holds of a combined claim batch (claimcombine.go), as
-- end_hold.sql claims one: each found by its primary key. ? picked as JSON
-- [[shop, checkout hex], …], ? the claims' end time.
UPDATE JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
STRAIGHT_JOIN holds h
  ON h.shop_id = j.shop AND h.checkout_id = UNHEX(j.id)
SET h.status = 'claimed', h.ended_at = ?
WHERE h.status = 'held'
