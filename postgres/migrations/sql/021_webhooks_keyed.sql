-- holdfast schema, version 21: webhook endpoints and dead letters keyed by
-- (shop_id, id), as migration 15 keyed the events and the ledger, so a
-- shop move (pods, postgres/pgmove) carries a shop's endpoints — their
-- cursors continue on the target — without colliding with the target's
-- own ids. The delivery statements address an endpoint by (shop_id, id).
ALTER TABLE webhook_dead_letters
    DROP CONSTRAINT webhook_dead_letters_endpoint_id_fkey,
    DROP CONSTRAINT webhook_dead_letters_endpoint_id_cursor_key;
ALTER TABLE webhook_endpoints
    DROP CONSTRAINT webhook_endpoints_pkey,
    ADD PRIMARY KEY (shop_id, id);
DROP INDEX webhook_endpoints_shop;
ALTER TABLE webhook_dead_letters
    DROP CONSTRAINT webhook_dead_letters_pkey,
    ADD PRIMARY KEY (shop_id, id),
    ADD UNIQUE (shop_id, endpoint_id, cursor),
    ADD FOREIGN KEY (shop_id, endpoint_id) REFERENCES webhook_endpoints (shop_id, id) ON DELETE CASCADE;
DROP INDEX webhook_dead_letters_shop;
