-- The claim's first step: deduct the lines from the ledger, once per checkout.
WITH c AS (
    INSERT INTO legacy_redis_claims (shop_id, checkout_id) VALUES ($1, $2)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
INSERT INTO legacy_redis_ledger AS g (shop_id, item_id, location_id, on_hand)
SELECT $1, l.item, l.loc, -l.q
FROM unnest($3::bigint[], $4::bigint[], $5::bigint[]) AS l(item, loc, q)
WHERE EXISTS (SELECT 1 FROM c)
ON CONFLICT (shop_id, item_id, location_id) DO UPDATE SET on_hand = g.on_hand + excluded.on_hand
