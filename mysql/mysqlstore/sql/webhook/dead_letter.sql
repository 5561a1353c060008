-- An event past the retry horizon: keep it as a dead letter (once: a
-- second time changes nothing). ? id, shop, cursor, event, attempts, error.
INSERT INTO webhook_dead_letters (endpoint_id, shop_id, `cursor`, event, attempts, last_error, dead_at)
VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE id = id
