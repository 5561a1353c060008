-- The TTL (µs) the edit that made a hold's revision carried: 0 when it
-- kept the expiry or when no edit made it (revision 1, the reservation).
-- No row: the hold is at another revision now.
-- $1 checkout, $2 shop, $3 revision.
SELECT coalesce(edit_ttl, 0)
FROM holds
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND revision = $3::bigint
