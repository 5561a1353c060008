-- Give an endpoint's lease back. $1 id.
UPDATE webhook_endpoints SET leased_until = NULL WHERE id = $1::bigint
