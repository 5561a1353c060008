-- A checkout's waiters row. lapsed: waiting but past its wait (never
-- granted; the server ends it on its next pass). ? now, ? shop, ? checkout.
SELECT status, cart, short, wait_until, seq,
       status = 'waiting' AND wait_until <= COALESCE(?, UTC_TIMESTAMP(6))
FROM waiters WHERE shop_id = ? AND checkout_id = ?
