-- The audit entry of an API key's change, in the change's transaction
-- (the engine's audit_log; httpapi.KeyAudit makes the record).
-- $1 shop (0: an admin key), $2 action, $3 key id of the actor (NULL:
-- none), $4 actor, $5 remote, $6 request id, $7 detail (JSON).
INSERT INTO audit_log (shop_id, action, key_id, actor, remote, request_id, detail)
VALUES ($1::bigint, $2::text, $3::bigint, $4::text, $5::text, $6::text, $7::jsonb)
