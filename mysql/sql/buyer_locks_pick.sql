-- A batch of buyer lock rows to purge: of buyers with no hold of the shop
-- left on record (their outcomes purged), in key order, skipping rows a
-- transaction holds (never waiting; a row in use stays). Its locks keep
-- them until buyer_locks_delete. ? batch size.
SELECT bl.shop_id, bl.inventory_item_id, HEX(bl.buyer_hash)
FROM buyer_locks bl
WHERE NOT EXISTS (SELECT 1 FROM holds h WHERE h.shop_id = bl.shop_id AND h.buyer_hash = bl.buyer_hash)
  -- a shop fenced here (a move, migration 15) is purged by the move, and
  -- one a move is copying waits for the fence's end
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = bl.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', bl.shop_id)) IS NULL
ORDER BY bl.shop_id, bl.inventory_item_id, bl.buyer_hash
LIMIT ?
FOR UPDATE SKIP LOCKED
