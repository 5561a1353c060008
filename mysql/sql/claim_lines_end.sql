-- End a held checkout as claimed by a partial claim: its lines become the
-- claimed ones, and the rest, given back in the same transaction, is kept
-- as released so a retry answers the same. The caller holds the row
-- (hold_lock.sql). ? claimed lines, ? released lines (NULL: none), ? now,
-- ? shop, ? checkout.
UPDATE holds
SET status = 'claimed', cart = ?, released = ?, ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
