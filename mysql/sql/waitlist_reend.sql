-- A granted wait whose checkout turned out to have a hold of its own
-- already: it ends as expired instead (nothing held for the wait).
-- ? shop, ? checkout.
UPDATE waiters SET status = 'expired'
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
