-- Remove an endpoint (its dead letters go with it: ON DELETE CASCADE).
-- ? shop, id.
DELETE FROM webhook_endpoints WHERE shop_id = ? AND id = ?
