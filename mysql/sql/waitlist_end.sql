-- End one wait: held (granted) or expired. ? status, ? now (NULL: the
-- database clock), ? shop, ? checkout.
UPDATE waiters SET status = ?, ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = 'waiting'
