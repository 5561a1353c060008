-- One batch of held checkouts past their expiry (a hold is valid up to and
-- including its expiry instant), locked, skipping those
-- another transaction is deciding. ? now, ? batch.
SELECT shop_id, checkout_id FROM holds
WHERE status = 'held' AND expires_at < COALESCE(?, UTC_TIMESTAMP(6))
  -- a shop arriving, gone or being copied (a move, migration 15) is not
  -- this pod's to sweep now: its writes would be refused
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holds.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL
ORDER BY expires_at
LIMIT ?
FOR UPDATE SKIP LOCKED
