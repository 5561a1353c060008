-- Whether any checkout waits: one probe of the waiters_queue index, so a
-- pass of the waitlist server costs one statement when nobody waits.
SELECT EXISTS (SELECT 1 FROM waiters WHERE status = 'waiting')
