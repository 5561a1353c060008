-- A shop's sequenced events after a cursor, in cursor order (the feed).
-- $1 shop, $2 after, $3 limit.
SELECT seq, type, checkout_id, lines, expires_at, inventory_item_id, location_id,
       delta, available, reason, reference, created_at
FROM holdfast_events
WHERE shop_id = $1::bigint AND seq > $2::bigint AND seq IS NOT NULL
ORDER BY seq
LIMIT $3::int
