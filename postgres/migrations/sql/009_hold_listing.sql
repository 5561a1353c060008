-- A shop's holds newest first (Client.Holds, GET /v1/shops/{shop}/holds,
-- the console): keyset pagination on (created_at, checkout_id) reads this
-- index backwards instead of sorting every hold of the shop. The listing
-- works without it (only slower), so the engine does not require it.
CREATE INDEX holds_shop_created ON holds (shop_id, created_at, checkout_id);
