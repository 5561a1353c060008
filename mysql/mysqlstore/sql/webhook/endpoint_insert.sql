-- Register an endpoint, starting after the given cursor (the shop's feed
-- head, endpoint_head.sql, when none was given: only new events are
-- delivered). Its id is LAST_INSERT_ID(). ? shop, url, secret, cursor.
INSERT INTO webhook_endpoints (shop_id, url, secret, `cursor`, created_at, next_at)
VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
