-- The sequencer's lock: one sequencer at a time across every process,
-- transaction-scoped (PgBouncer transaction pooling safe). The two-integer
-- form is a key space of its own, apart from the per-key locks.
SELECT pg_try_advisory_xact_lock(1752132708, 17)
