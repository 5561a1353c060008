-- Purge a batch of ended waits older than the retention window.
-- ? now, ? retention µs, ? batch size.
DELETE FROM waiters
WHERE status <> 'waiting'
  -- a shop fenced here (a move, migration 15) is purged by the move
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = waiters.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL -- nor a shop a move is copying
  AND ended_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY ended_at
LIMIT ?
