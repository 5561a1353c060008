-- ? shop, ? checkout.
SELECT status, cart, created_at, expires_at, deadline, ended_at
FROM holds WHERE shop_id = ? AND checkout_id = ?
