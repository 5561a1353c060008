-- The carts of a shop waiting ahead of seq (for a waiter's position).
-- ? shop, ? seq.
SELECT cart FROM waiters
WHERE shop_id = ? AND status = 'waiting' AND seq < ?
ORDER BY seq
