-- A checkout's hold or outcome, and whether a held one is past its expiry
-- (lapsed: expired but not swept yet, still claimable).
-- $1 checkout, $2 shop, $3 now (NULL: database clock).
SELECT status, lines, created_at, expires_at, deadline, ended_at,
       status = 'held' AND expires_at < coalesce($3::timestamptz, clock_timestamp()),
       revision, released
FROM holds
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint
