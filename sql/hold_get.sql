-- A checkout's hold or outcome. $1 checkout, $2 shop.
SELECT status, lines, created_at, expires_at, deadline, ended_at
FROM holds
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint
