-- An event was accepted: move the endpoint's cursor past it and clear its
-- failure state (next_at stays: unlease.sql sets it); only while $4 is its
-- lease token (no row: a later lease has it). $1 id, $2 cursor, $3 shop,
-- $4 token.
UPDATE webhook_endpoints
SET cursor = greatest(cursor, $2::bigint), attempts = 0, first_failed_at = NULL, last_error = NULL
WHERE shop_id = $3::bigint AND id = $1::bigint AND lease_token = $4::bigint
