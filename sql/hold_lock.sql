-- A checkout's hold or outcome, locked: waits for whoever is deciding it and
-- returns it as they left it. $1 checkout, $2 shop.
SELECT status, lines, created_at, expires_at, deadline, ended_at
FROM holds
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint
FOR UPDATE
