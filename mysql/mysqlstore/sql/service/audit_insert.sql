-- The audit entry of an API key's change, in the change's transaction
-- (the engine's audit_log; httpapi.KeyAudit makes the record).
-- ? shop (0: an admin key), ? action, ? key id of the actor (NULL: none),
-- ? actor, ? remote, ? request id, ? detail (JSON).
INSERT INTO audit_log (shop_id, action, key_id, actor, remote, request_id, detail, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))
