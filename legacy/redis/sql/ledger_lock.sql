-- The key's ledger row, created at zero when new, locked for a stock change.
INSERT INTO legacy_redis_ledger AS g (shop_id, item_id, location_id, on_hand)
VALUES ($1, $2, $3, 0)
ON CONFLICT (shop_id, item_id, location_id) DO UPDATE SET on_hand = g.on_hand
RETURNING on_hand
