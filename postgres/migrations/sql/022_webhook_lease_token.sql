-- holdfast schema, version 22: a lease token per webhook endpoint. Each
-- lease (lease.sql) gives the endpoint a new token; the deliverer's writes
-- (delivered, failed, dead letter, unlease) take effect only while their
-- token is still the endpoint's. A deliverer whose lease ran out (a pause,
-- a slow receiver under load) and was taken by another can no longer add
-- its attempts to the other's, move the endpoint past an event or give
-- the other's lease back.
ALTER TABLE webhook_endpoints ADD COLUMN lease_token bigint NOT NULL DEFAULT 0;
