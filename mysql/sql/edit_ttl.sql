-- The TTL (µs) the edit that made a hold's revision carried: 0 when it
-- kept the expiry or when no edit made it (revision 1, the reservation).
-- No row: the hold is at another revision now.
-- ? shop, ? checkout, ? revision.
SELECT COALESCE(edit_ttl, 0)
FROM holds
WHERE shop_id = ? AND checkout_id = ? AND revision = ?
