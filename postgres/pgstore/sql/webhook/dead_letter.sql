-- An event past the retry horizon: keep it as a dead letter and move the
-- endpoint past it, both only while $7 is the endpoint's lease token (no
-- row: a later lease has it). The endpoint's row is updated (locked)
-- before the dead letter is inserted under its foreign key. $1 id, $2 shop,
-- $3 cursor, $4 event, $5 attempts, $6 error, $7 token.
WITH e AS (
    UPDATE webhook_endpoints
    SET cursor = greatest(cursor, $3::bigint), attempts = 0, first_failed_at = NULL, next_at = clock_timestamp()
    WHERE shop_id = $2::bigint AND id = $1::bigint AND lease_token = $7::bigint
    RETURNING shop_id, id
), d AS (
    INSERT INTO webhook_dead_letters (endpoint_id, shop_id, cursor, event, attempts, last_error)
    SELECT e.id, e.shop_id, $3::bigint, $4::jsonb, $5::int, $6::text FROM e
    ON CONFLICT (shop_id, endpoint_id, cursor) DO NOTHING
)
SELECT count(*) FROM e
