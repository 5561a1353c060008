-- Lease an endpoint lease_due.sql locked. ? lease µs, id.
UPDATE webhook_endpoints
SET leased_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
WHERE id = ?
