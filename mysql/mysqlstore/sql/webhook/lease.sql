-- Lease an endpoint lease_due.sql locked, with a new token (the one read
-- plus one: the row stays locked in between): the deliverer's writes are
-- fenced by it (lease_check.sql). ? lease µs, shop, id.
UPDATE webhook_endpoints
SET leased_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6)), lease_token = lease_token + 1
WHERE shop_id = ? AND id = ?
