-- Lock a combined claim batch's held holds (claimcombine.go), skipping
-- those another transaction has locked: the engine serves those, and
-- checkouts not held (claimed, released, swept, merged, none), on the plain
-- path. Also the claims' end time. Each hold is found by its primary key
-- (STRAIGHT_JOIN: see take_pool_delete.sql); the claims come sorted by
-- (shop, checkout). ? now, ? claims as JSON [[shop, checkout hex], …].
SELECT h.shop_id, h.checkout_id, h.cart, h.created_at, h.expires_at, h.deadline, h.revision,
       COALESCE(?, UTC_TIMESTAMP(6))
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) j
STRAIGHT_JOIN holds h
  ON h.shop_id = j.shop AND h.checkout_id = UNHEX(j.id)
WHERE h.status = 'held'
FOR UPDATE SKIP LOCKED
