-- Wait for whoever holds a key's advisory lock (a refill, an adjustment) to
-- finish, without excluding the others that wait too: a shared lock.
-- $1 key hash.
SELECT pg_advisory_xact_lock_shared($1::bigint)
