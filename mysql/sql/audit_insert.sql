-- One audit entry, in the transaction of the change it records.
-- ? shop, ? action, ? key id (NULL: no key), ? actor, ? remote,
-- ? request id, ? detail (JSON), ? now (NULL: the database's clock).
INSERT INTO audit_log (shop_id, action, key_id, actor, remote, request_id, detail, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
