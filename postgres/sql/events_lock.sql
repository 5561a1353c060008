-- The sequencer's lock: one sequencer at a time across every process,
-- transaction-scoped (PgBouncer transaction pooling safe). The two-integer
-- form is a key space of its own, apart from the per-key locks. Waiting
-- for it (one short batch at most) is what lets Events answer with every
-- event committed before the call.
SELECT pg_advisory_xact_lock(1752132708, 17)
