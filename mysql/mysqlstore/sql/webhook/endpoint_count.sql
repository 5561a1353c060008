-- A shop's endpoints, counted under a lock on them before a new one is
-- added (the per-shop bound). ? shop.
SELECT COUNT(*) FROM webhook_endpoints WHERE shop_id = ? FOR UPDATE
