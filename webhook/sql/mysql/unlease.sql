-- Give an endpoint's lease back. ? id.
UPDATE webhook_endpoints SET leased_until = NULL WHERE id = ?
