-- Webhook endpoints and their dead letters (package webhook), as
-- PostgreSQL's (migrate 008): a shop's registered targets with their
-- delivery cursor (the last event delivered or given up), the retry state
-- of the event being retried, and the lease that gives each endpoint to one
-- deliverer at a time across processes. `cursor` is a reserved word here.
CREATE TABLE webhook_endpoints (
    id              BIGINT        NOT NULL AUTO_INCREMENT,
    shop_id         BIGINT        NOT NULL,
    url             VARCHAR(2000) NOT NULL,
    secret          VARCHAR(100)  NOT NULL,
    `cursor`        BIGINT        NOT NULL DEFAULT 0,
    attempts        INT           NOT NULL DEFAULT 0,
    next_at         DATETIME(6)   NULL,
    first_failed_at DATETIME(6)   NULL,
    last_error      VARCHAR(500)  NULL,
    leased_until    DATETIME(6)   NULL,
    created_at      DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    KEY webhook_endpoints_shop (shop_id, id),
    CONSTRAINT webhook_endpoints_shop_id CHECK (shop_id > 0),
    CONSTRAINT webhook_endpoints_url CHECK (url LIKE 'http://%' OR url LIKE 'https://%')
) ENGINE = InnoDB;

-- Events an endpoint did not accept within the retry horizon.
CREATE TABLE webhook_dead_letters (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    endpoint_id BIGINT       NOT NULL,
    shop_id     BIGINT       NOT NULL,
    `cursor`    BIGINT       NOT NULL,
    event       JSON         NOT NULL,
    attempts    INT          NOT NULL,
    last_error  VARCHAR(500) NOT NULL,
    dead_at     DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY webhook_dead_letters_event (endpoint_id, `cursor`),
    KEY webhook_dead_letters_shop (shop_id, id),
    CONSTRAINT webhook_dead_letters_endpoint FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE CASCADE
) ENGINE = InnoDB;
