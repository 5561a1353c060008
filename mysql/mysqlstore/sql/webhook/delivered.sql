-- An event was accepted: move the endpoint's cursor past it and clear its
-- failure state (next_at stays: unlease.sql sets it). After
-- lease_check.sql. ? cursor, shop, id.
UPDATE webhook_endpoints
SET `cursor` = GREATEST(`cursor`, ?), attempts = 0, first_failed_at = NULL, last_error = NULL
WHERE shop_id = ? AND id = ?
