-- Register an endpoint, starting after the given cursor (NULL: the shop's
-- current feed head, so only new events are delivered). Its id is
-- LAST_INSERT_ID(). ? shop, url, secret, after, shop.
INSERT INTO webhook_endpoints (shop_id, url, secret, `cursor`, created_at, next_at)
VALUES (?, ?, ?, COALESCE(?, (SELECT last_seq FROM holdfast_event_shops WHERE shop_id = ?), 0), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
