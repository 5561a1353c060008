-- hold_get, locking the row: waits for whoever is deciding the hold and
-- reads what they decided. ? now, ? shop, ? checkout.
SELECT status, cart, created_at, expires_at, deadline, ended_at,
       status = 'held' AND expires_at < COALESCE(?, UTC_TIMESTAMP(6)),
       revision, released
FROM holds WHERE shop_id = ? AND checkout_id = ?
FOR UPDATE
