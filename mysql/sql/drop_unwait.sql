-- Remove an entrant's standing wait so the draw enqueues it afresh, in
-- lottery order. ? shop, ? checkout, ? shop, ? checkout.
DELETE FROM waiters
WHERE shop_id = ? AND checkout_id = ? AND status = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM waiter_lines l WHERE l.shop_id = ? AND l.checkout_id = ?)
