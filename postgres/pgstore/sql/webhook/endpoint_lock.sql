-- Lock a shop's registrations (transaction-scoped advisory lock, two-int
-- key space: never equal to a key's one-bigint lock) before counting them
-- against the per-shop bound: two registrations for the same shop take
-- turns, so the count cannot be stale. $1 shop.
SELECT pg_advisory_xact_lock(1752132730, hashtext($1::bigint::text))
