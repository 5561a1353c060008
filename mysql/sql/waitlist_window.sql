-- The next keys with waiters after a cursor, in key order: the window of
-- one pass of the waitlist server (round robin over every key with
-- waiters, whatever its shop). Grouped on waiter_lines' primary key
-- prefix: a loose index scan, one probe per key however many wait on it.
-- ? shop, ? shop, ? item, ? shop, ? item, ? location of the cursor
-- (0, 0, 0: from the start), ? limit.
SELECT shop_id, inventory_item_id, location_id FROM waiter_lines
WHERE shop_id > ?
   OR (shop_id = ? AND (inventory_item_id > ? OR (inventory_item_id = ? AND location_id > ?)))
GROUP BY shop_id, inventory_item_id, location_id
-- a shop fenced here (a move, migration 15) is not this pod's to serve; a
-- shop a move is copying (its move lock held) waits for the fence's end
HAVING NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = waiter_lines.shop_id)
   AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL
ORDER BY shop_id, inventory_item_id, location_id
LIMIT ?
