-- Delete the buyer lock rows buyer_locks_pick locked (STRAIGHT_JOIN: see
-- take_pool_delete.sql). ? picked as JSON [[shop, item, hash hex], …].
DELETE bl FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         item BIGINT      PATH '$[1]',
         hash VARCHAR(64) PATH '$[2]')) j
STRAIGHT_JOIN buyer_locks bl
  ON bl.shop_id = j.shop AND bl.inventory_item_id = j.item AND bl.buyer_hash = UNHEX(j.hash)
