-- One migrator at a time (an arbitrary constant: "podmap").
SELECT pg_advisory_xact_lock(1752139028)
