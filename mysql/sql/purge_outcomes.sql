-- One batch of outcome records past retention. ? now, ? retention µs, ? batch.
DELETE FROM holds
WHERE status <> 'held' AND ended_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
  -- a shop fenced here (a move, migration 15) is purged by the move
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holds.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL -- nor a shop a move is copying
ORDER BY ended_at
LIMIT ?
