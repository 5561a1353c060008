-- One of a shop's endpoints, locked (for its removal). ? shop, id.
SELECT id, shop_id, url, `cursor`, attempts, next_at, last_error, created_at
FROM webhook_endpoints
WHERE shop_id = ? AND id = ?
FOR UPDATE
