-- hold_get, locking the row: waits for whoever is deciding the hold and
-- reads what they decided. ? shop, ? checkout.
SELECT status, cart, created_at, expires_at, deadline, ended_at
FROM holds WHERE shop_id = ? AND checkout_id = ?
FOR UPDATE
