-- Whether another attempt of a checkout is in flight, without waiting: an
-- error (lock wait, NOWAIT) means it is. Under READ COMMITTED an absent
-- record takes no lock, so an ordinary sold-out answer waits for nothing.
-- ? shop, ? checkout.
SELECT 1 FROM reserve_inflight WHERE shop_id = ? AND checkout_id = ? FOR UPDATE NOWAIT
