-- One waitlist server pass at a time.
SELECT id FROM waitlist_lock WHERE id = 1 FOR UPDATE
