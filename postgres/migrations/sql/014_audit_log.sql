-- The audit log (issue #30 item 6): every stock change, admin action and
-- API key change, written in the transaction of the change it records.
-- Who: key_id and actor (the key's name, or 'cli' / 'library' when no key
-- made it); what: action and detail; when: created_at, the database's
-- clock; from where: remote and request_id, over HTTP. Kept for
-- Config.AuditRetention (90 days by default), purged in batches by the
-- maintenance workers through audit_log_created.
CREATE TABLE audit_log (
    id         bigint      GENERATED ALWAYS AS IDENTITY,
    -- 0: the deployment's own entries (an admin key's changes).
    shop_id    bigint      NOT NULL CHECK (shop_id >= 0),
    action     text        NOT NULL CHECK (length(action) BETWEEN 1 AND 32),
    key_id     bigint,
    actor      text        NOT NULL,
    remote     text        NOT NULL DEFAULT '',
    request_id text        NOT NULL DEFAULT '',
    detail     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- Keyed by shop (a shop's rows carry to another pod on a move,
    -- postgres/pgmove): a shop's log newest first is this key backwards.
    PRIMARY KEY (shop_id, id)
);
CREATE INDEX audit_log_created ON audit_log (created_at);
