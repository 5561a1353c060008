-- A shop's dead letters, newest first. ? shop, limit.
SELECT id, endpoint_id, shop_id, `cursor`, event, attempts, last_error, dead_at
FROM webhook_dead_letters
WHERE shop_id = ?
ORDER BY id DESC
LIMIT ?
