-- A checkout's waiters row. lapsed: waiting but past its wait (never
-- granted; the server ends it on its next pass). queued: it has queued
-- lines (false for a drop's entrant before the draw: it has no place yet).
-- ? now, ? shop, ? checkout.
SELECT status, cart, short, wait_until, seq,
       status = 'waiting' AND wait_until <= COALESCE(?, UTC_TIMESTAMP(6)),
       EXISTS (SELECT 1 FROM waiter_lines l WHERE l.shop_id = w.shop_id AND l.checkout_id = w.checkout_id)
FROM waiters w WHERE w.shop_id = ? AND w.checkout_id = ?
