-- Whether any checkout waits: one probe of the waiters_queue index, so a
-- pass of the waitlist server costs one statement when nobody waits.
-- An open drop counts too: its draw is the pass's (engine/drop.go).
SELECT EXISTS (SELECT 1 FROM waiters WHERE status = 'waiting')
    OR EXISTS (SELECT 1 FROM drops WHERE state = 'open')
