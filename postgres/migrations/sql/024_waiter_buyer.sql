-- A waiter's buyer (issue: a granted wait recorded no buyer). The keyed
-- hash of the buyer id a waiting checkout was enqueued with — a plain
-- waitlist entry with ReserveParams.BuyerID, or a drop's entrant, queued by
-- the draw — written at enqueue (waitlist_enqueue.sql) and copied onto the
-- hold the waitlist server grants (waitlist.go grantWait), so a retry of
-- the granted checkout by its own buyer replays the hold
-- (engine.SameBuyer) and the hold counts towards the buyer's limits
-- (buyer_count.sql). NULL: enqueued without a buyer id (and every wait
-- enqueued before this migration).
ALTER TABLE waiters ADD COLUMN buyer_hash bytea CHECK (octet_length(buyer_hash) = 32);
