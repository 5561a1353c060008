-- holdfast MySQL/MariaDB schema, version 21: a waiter's buyer, as
-- PostgreSQL's migration 24. The keyed hash of the buyer id a waiting
-- checkout was enqueued with (a plain waitlist entry with
-- ReserveParams.BuyerID, or a drop's entrant, queued by the draw), written
-- at enqueue and copied onto the hold the waitlist server grants, so the
-- buyer's retry of the granted checkout replays the hold and the hold
-- counts towards the buyer's limits. NULL: enqueued without a buyer id.
-- A new column on a shop table: the move guard's triggers of migration 15
-- stay as they are (a trigger belongs to its table).
ALTER TABLE waiters ADD COLUMN buyer_hash BINARY(32) NULL;
