-- Register an endpoint, starting after the given cursor (NULL: after
-- every event of the shop committed before the registration: the shop's
-- feed head plus the shop's events committed but not yet given a cursor,
-- which the sequencer numbers next, so only new events are delivered; a
-- row of a statement's holds is n of them, migration 28).
-- Refused (no row) past the per-shop bound, counted under
-- endpoint_lock.sql. $1 shop, $2 url, $3 secret, $4 after, $5 max.
INSERT INTO webhook_endpoints (shop_id, url, secret, cursor, next_at)
SELECT $1::bigint, $2::text, $3::text,
       coalesce($4::bigint,
                coalesce((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = $1::bigint), 0)
                + (SELECT coalesce(sum(n), 0) FROM holdfast_events WHERE shop_id = $1::bigint AND seq IS NULL)),
       clock_timestamp()
WHERE (SELECT count(*) FROM webhook_endpoints WHERE shop_id = $1::bigint) < $5::int
RETURNING id, shop_id, url, cursor, attempts, next_at, last_error, created_at
