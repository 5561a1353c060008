-- An explicit event from engine code (e.g. waitlist.held), written in the
-- caller's transaction like the triggers' events and sequenced the same
-- way. $1 shop, $2 type, $3 checkout (NULL: none), $4 lines json (NULL:
-- none), $5 expires_at (NULL), $6 at (NULL: database clock).
INSERT INTO holdfast_events (shop_id, type, checkout_id, lines, expires_at, created_at)
VALUES ($1::bigint, $2::text, $3::uuid, $4::jsonb, $5::timestamptz, coalesce($6::timestamptz, clock_timestamp()))
