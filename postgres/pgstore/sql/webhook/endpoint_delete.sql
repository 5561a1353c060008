-- Remove an endpoint (its dead letters go with it) and answer it as it
-- was, with its dead letters counted (the statement's snapshot sees them
-- before the cascade). $1 shop, $2 id.
DELETE FROM webhook_endpoints e WHERE e.shop_id = $1::bigint AND e.id = $2::bigint
RETURNING e.id, e.shop_id, e.url, e.cursor, e.attempts, e.next_at, e.last_error, e.created_at,
          (SELECT count(*) FROM webhook_dead_letters d WHERE d.shop_id = e.shop_id AND d.endpoint_id = e.id)
