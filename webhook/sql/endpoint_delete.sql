-- Remove an endpoint (its dead letters go with it). $1 shop, $2 id.
DELETE FROM webhook_endpoints WHERE shop_id = $1::bigint AND id = $2::bigint
RETURNING id, shop_id, url, cursor, attempts, next_at, last_error, created_at
