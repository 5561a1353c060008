-- Remove an entrant's standing wait so the draw enqueues it afresh, in
-- lottery order. $1 shop, $2 checkout.
DELETE FROM waiters w
WHERE w.shop_id = $1::bigint AND w.checkout_id = $2::uuid AND w.status = 'waiting'
  AND NOT EXISTS (SELECT 1 FROM waiter_lines l
                  WHERE l.shop_id = w.shop_id AND l.checkout_id = w.checkout_id)
