-- Whether no other attempt of the shop's checkout is in flight: its hold
-- row may be inserted but not committed, and such an attempt holds the
-- checkout's in-flight lock (shared, hold_insert.sql) until it ends. Taken
-- without waiting, in the same implicit transaction as — and before — the
-- hint's read (sold_out.sql), so that read's snapshot sees the hold of any
-- attempt that held the lock before this statement. False: the retry takes
-- the normal path, waits there for the first attempt and answers its hold
-- (issue #10 item 4). $1 checkout.
SELECT pg_try_advisory_xact_lock(1752132719, hashtext($1::uuid::text))
