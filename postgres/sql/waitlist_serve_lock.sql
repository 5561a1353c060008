-- One waitlist server at a time, across replicas: a transaction-scoped
-- advisory lock in the two-int key space (never equal to a key's lock,
-- which uses the one-bigint space).
SELECT pg_advisory_xact_lock(1752132716, 1)
