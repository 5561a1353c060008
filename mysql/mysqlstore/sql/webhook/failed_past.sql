-- Whether the retry horizon (? µs since the first failure of the event)
-- has passed, after failed.sql. ? horizon µs, shop, id.
SELECT TIMESTAMPDIFF(MICROSECOND, first_failed_at, UTC_TIMESTAMP(6)) >= ?
FROM webhook_endpoints
WHERE shop_id = ? AND id = ?
