-- A reservation attempt's first write: its checkout's in-flight mark,
-- deleted again by inflight_unmark in the same transaction (the record and
-- its lock stay until COMMIT or ROLLBACK). Waits for another attempt of the
-- same checkout. ? shop, ? checkout.
INSERT INTO reserve_inflight (shop_id, checkout_id) VALUES (?, ?)
