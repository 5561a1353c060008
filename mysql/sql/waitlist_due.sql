-- A batch of waits that ran out. ? now (NULL: the database clock), ? limit.
SELECT shop_id, checkout_id, cart FROM waiters
WHERE status = 'waiting' AND wait_until <= COALESCE(?, UTC_TIMESTAMP(6))
  -- a shop fenced here (a move, migration 15) is not this pod's to serve
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = waiters.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL
ORDER BY wait_until
LIMIT ?
