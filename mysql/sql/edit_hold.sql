-- Give a held checkout its edited lines and revision, and its new expiry
-- when the edit asks for one (now + ttl, capped by the deadline); keep the
-- edit's ttl, which a retry of the revision must match (edit_ttl.sql). The
-- caller holds the row (hold_lock.sql).
-- ? lines, ? revision, ? the edit's ttl µs, ? ttl µs (0: keep the expiry), ? now, ? ttl µs,
-- ? shop, ? checkout.
UPDATE holds
SET cart = ?, revision = ?, edit_ttl = ?,
    expires_at = CASE WHEN ? > 0
                      THEN LEAST(COALESCE(?, UTC_TIMESTAMP(6)) + INTERVAL ? MICROSECOND, deadline)
                      ELSE expires_at END
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
