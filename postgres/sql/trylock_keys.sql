-- Try the advisory locks of several keys without waiting; returns the indexes
-- (1-based) of the keys locked. $1 key hashes.
SELECT k.n::int
FROM unnest($1::bigint[]) WITH ORDINALITY AS k(h, n)
WHERE pg_try_advisory_xact_lock(k.h)
