-- A checkout's hold or outcome, and whether a held one is past its expiry
-- (lapsed: expired but not swept yet, still claimable; a hold is valid up
-- to and including its expiry instant). ? now, ? shop, ? checkout.
SELECT status, cart, created_at, expires_at, deadline, ended_at,
       status = 'held' AND expires_at < COALESCE(?, UTC_TIMESTAMP(6)),
       revision, released
FROM holds WHERE shop_id = ? AND checkout_id = ?
