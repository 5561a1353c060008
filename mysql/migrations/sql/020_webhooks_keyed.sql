-- holdfast MySQL/MariaDB schema, version 20: webhook endpoints and dead
-- letters keyed by (shop_id, id), as PostgreSQL's migration 21 and as
-- migration 15 keyed the events and the ledger, so a shop move (pods,
-- mysql/mymove) carries a shop's endpoints — their cursors continue on the
-- target — without colliding with the target's own ids (every pod's
-- AUTO_INCREMENTs start at 1). KEY (id) keeps InnoDB's AUTO_INCREMENT rule;
-- InnoDB raises a table's AUTO_INCREMENT past an id a copy inserts. The
-- dead letters' foreign key names the endpoint by shop and id; the store's
-- statements address an endpoint by shop and id (mysqlstore). The move
-- guard's triggers of migration 15 stay on both tables (a trigger belongs
-- to its table, not to its keys).
ALTER TABLE webhook_dead_letters DROP FOREIGN KEY webhook_dead_letters_endpoint;
ALTER TABLE webhook_endpoints
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (shop_id, id),
    ADD KEY webhook_endpoints_id (id),
    DROP KEY webhook_endpoints_shop;
ALTER TABLE webhook_dead_letters
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (shop_id, id),
    ADD KEY webhook_dead_letters_id (id),
    DROP KEY webhook_dead_letters_event,
    ADD UNIQUE KEY webhook_dead_letters_event (shop_id, endpoint_id, `cursor`),
    DROP KEY webhook_dead_letters_shop,
    ADD CONSTRAINT webhook_dead_letters_endpoint FOREIGN KEY (shop_id, endpoint_id) REFERENCES webhook_endpoints (shop_id, id) ON DELETE CASCADE;
