-- A granted wait whose checkout turned out to have a hold of its own
-- already: it ends as expired instead (nothing held for the wait).
-- $1 shop, $2 checkout.
UPDATE waiters SET status = 'expired'
WHERE shop_id = $1::bigint AND checkout_id = $2::uuid AND status = 'held'
