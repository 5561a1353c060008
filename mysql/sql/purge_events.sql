-- One batch of sequenced events past the event retention that every
-- webhook endpoint of their shop has received (its cursor is at or past
-- the row's last cursor, seq + n - 1: a row covers n, migration 23), or
-- past the hard cap (EventRetentionMax): then the endpoint
-- records the gap as a dead letter (package webhook).
-- ? now, ? retention µs, ? now, ? cap µs, ? batch.
DELETE FROM holdfast_events
WHERE seq IS NOT NULL AND created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
  -- a shop fenced here (a move, migration 15) is purged by the move
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holdfast_events.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL -- nor a shop a move is copying
  AND (created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
       OR NOT EXISTS (SELECT 1 FROM webhook_endpoints w
                      WHERE w.shop_id = holdfast_events.shop_id AND w.`cursor` < holdfast_events.seq + holdfast_events.n - 1))
ORDER BY created_at
LIMIT ?
