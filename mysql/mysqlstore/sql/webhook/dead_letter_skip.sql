-- … and move the endpoint past it. ? cursor, shop, id.
UPDATE webhook_endpoints
SET `cursor` = GREATEST(`cursor`, ?), attempts = 0, first_failed_at = NULL, next_at = UTC_TIMESTAMP(6)
WHERE shop_id = ? AND id = ?
