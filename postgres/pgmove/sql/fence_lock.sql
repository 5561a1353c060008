-- The move's fence: the shop's advisory lock, exclusively, for the session.
-- Waits for the writes in flight (holdfast_shop_guard takes it shared);
-- while this waits and while it is held, new writes are refused.
SELECT pg_advisory_lock(1752139015, hashtext($1::bigint::text))
