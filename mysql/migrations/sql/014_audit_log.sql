-- The audit log (issue #30 item 6): every stock change, admin action and
-- API key change, written in the transaction of the change it records.
-- Who: key_id and actor (the key's name, or 'cli' / 'library' when no key
-- made it); what: action and detail; when: created_at, the database's
-- clock; from where: remote and request_id, over HTTP. Kept for
-- Config.AuditRetention (90 days by default), purged in batches by the
-- maintenance workers through audit_log_created. (Numbers are assigned
-- per feature on both engines at once; gaps are allowed.)
CREATE TABLE audit_log (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    shop_id    BIGINT       NOT NULL,
    action     VARCHAR(32)  NOT NULL,
    key_id     BIGINT       NULL,
    actor      VARCHAR(255) NOT NULL,
    remote     VARCHAR(255) NOT NULL DEFAULT '',
    request_id VARCHAR(128) NOT NULL DEFAULT '',
    detail     JSON         NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    KEY audit_log_shop (shop_id, id),
    KEY audit_log_created (created_at),
    CONSTRAINT audit_log_shop_id CHECK (shop_id >= 0)
) ENGINE = InnoDB;
