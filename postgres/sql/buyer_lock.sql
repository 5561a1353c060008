-- Serialise one buyer's reservations of one item (the check and the hold
-- it lets through commit together). Transaction-scoped; in the two-int
-- advisory lock space, disjoint from the keys' locks (lock_key.sql).
-- $1, $2 the (shop, item, buyer) lock key.
SELECT pg_advisory_xact_lock($1::int, $2::int)
