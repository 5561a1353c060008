-- Try one buyer's lock of an item without waiting (buyer_lock.sql's lock):
-- the waitlist server's grant takes it after the keys' locks, against the
-- lock order of a reservation (buyer locks, then key locks), so it must
-- not wait — false: a reservation of the buyer is in flight, the grant
-- waits for a later pass. $1, $2 the (shop, item, buyer) lock key.
SELECT pg_try_advisory_xact_lock($1::int, $2::int)
