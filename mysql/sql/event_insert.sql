-- An explicit event from engine code (e.g. waitlist.held), written in the
-- caller's transaction like the triggers' events and sequenced the same
-- way. ? shop, ? type, ? checkout (BINARY(16) or NULL), ? cart JSON (or
-- NULL), ? expires_at (or NULL), ? at (NULL: database clock).
INSERT INTO holdfast_events (shop_id, type, checkout_id, cart, expires_at, created_at)
VALUES (?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
