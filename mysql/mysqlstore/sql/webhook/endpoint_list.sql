-- A shop's endpoints with their dead letter counts. ? shop.
SELECT e.id, e.shop_id, e.url, e.`cursor`, e.attempts, e.next_at, e.last_error, e.created_at,
       (SELECT COUNT(*) FROM webhook_dead_letters d WHERE d.shop_id = e.shop_id AND d.endpoint_id = e.id)
FROM webhook_endpoints e
WHERE e.shop_id = ?
ORDER BY e.id
