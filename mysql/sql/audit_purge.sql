-- One batch of audit entries past their retention, oldest first through
-- audit_log_created. ? now, ? retention µs, ? batch.
DELETE FROM audit_log
WHERE created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
  -- a shop fenced here (a move, migration 15) is purged by the move
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = audit_log.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL -- nor a shop a move is copying
ORDER BY created_at
LIMIT ?
