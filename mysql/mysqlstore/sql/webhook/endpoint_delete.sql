-- Remove an endpoint (its dead letters go with it: ON DELETE CASCADE).
-- ? id.
DELETE FROM webhook_endpoints WHERE id = ?
