-- A shop's dead letters, newest first. $1 shop, $2 limit.
SELECT id, endpoint_id, shop_id, cursor, event, attempts, last_error, dead_at
FROM webhook_dead_letters
WHERE shop_id = $1::bigint
ORDER BY id DESC
LIMIT $2::int
