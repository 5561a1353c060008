-- One batch of committed, unsequenced events in id order (a consistent,
-- non-locking read: uncommitted events are not waited for, they are
-- sequenced by a later pass). A row takes n cursors (migration 23); a
-- grouped row's carts are in grouped. ? batch size (rows).
SELECT id, shop_id, type, cart, inventory_item_id, location_id, n, grouped
FROM holdfast_events
WHERE seq IS NULL
  -- a shop arriving or gone (a move, migration 15): its events are
  -- sequenced on the pod that serves it; one being copied waits
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = holdfast_events.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL
ORDER BY id
LIMIT ?
