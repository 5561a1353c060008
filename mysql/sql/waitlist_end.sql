-- End one wait that is still waiting: held (granted), expired, cancelled
-- (released) or unservable. No row changed: it was not waiting (the row
-- lock orders a grant and a cancel). ? status, ? now (NULL: the database
-- clock), ? shop, ? checkout.
UPDATE waiters SET status = ?, ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = 'waiting'
