-- A shop's endpoints with their dead letter counts. $1 shop.
SELECT e.id, e.shop_id, e.url, e.cursor, e.attempts, e.next_at, e.last_error, e.created_at,
       (SELECT count(*) FROM webhook_dead_letters d WHERE d.shop_id = e.shop_id AND d.endpoint_id = e.id)
FROM webhook_endpoints e
WHERE e.shop_id = $1::bigint
ORDER BY e.id
