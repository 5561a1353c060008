-- A checkout's hold or outcome, whichever shop owns it. $1 checkout.
SELECT shop_id, status, lines, created_at, expires_at, deadline, ended_at
FROM holds
WHERE checkout_id = $1::uuid
