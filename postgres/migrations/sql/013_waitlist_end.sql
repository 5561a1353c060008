-- How a wait ends (issue 24 items 4-5): besides held (granted) and expired
-- (ran out), a wait is cancelled by a release of its checkout, or ends as
-- unservable once its cart asks more of a key than the key's available
-- stock (a held unit was claimed, the stock lowered): nothing could ever
-- serve it, so it stops freezing the key's free units.
ALTER TABLE waiters DROP CONSTRAINT waiters_status_check;
ALTER TABLE waiters ADD CONSTRAINT waiters_status_check
    CHECK (status IN ('waiting', 'held', 'expired', 'cancelled', 'unservable'));
