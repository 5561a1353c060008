-- The probe's value as the current transaction reads it. ? none.
SELECT n FROM isolation_probe WHERE id = 1
