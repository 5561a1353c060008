-- One batch of held checkouts past their expiry (a hold is valid up to and
-- including its expiry instant), locked, skipping those
-- another transaction is deciding. ? now, ? batch.
SELECT shop_id, checkout_id FROM holds
WHERE status = 'held' AND expires_at < COALESCE(?, UTC_TIMESTAMP(6))
ORDER BY expires_at
LIMIT ?
FOR UPDATE SKIP LOCKED
