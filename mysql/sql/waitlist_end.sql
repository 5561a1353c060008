-- End one wait that is still waiting: held (granted), expired, cancelled
-- (released) or unservable. A wait past its wait_until ends as expired
-- whatever is asked (its outcome is decided: a read already answered it
-- expired). No row changed: it was not waiting (the row lock orders a
-- grant and a cancel). ? now (NULL: the database clock), ? status, ? now,
-- ? shop, ? checkout.
UPDATE waiters SET status = IF(wait_until <= COALESCE(?, UTC_TIMESTAMP(6)), 'expired', ?),
       ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = 'waiting'
