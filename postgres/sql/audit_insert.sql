-- One audit entry, in the transaction of the change it records.
-- $1 shop, $2 action, $3 key id (NULL: no key), $4 actor, $5 remote,
-- $6 request id, $7 detail (JSON), $8 now (NULL: the database's clock).
INSERT INTO audit_log (shop_id, action, key_id, actor, remote, request_id, detail, created_at)
VALUES ($1::bigint, $2::text, $3::bigint, $4::text, $5::text, $6::text, $7::jsonb,
        coalesce($8::timestamptz, clock_timestamp()))
