-- Try a key's advisory lock without waiting. $1 key hash.
SELECT pg_try_advisory_xact_lock($1::bigint)
