-- A shop's sequenced events after a cursor, in cursor order (the feed).
-- ? shop, ? after, ? limit.
SELECT seq, type, checkout_id, cart, expires_at, inventory_item_id, location_id,
       delta, available, reason, reference, created_at
FROM holdfast_events
WHERE shop_id = ? AND seq > ?
ORDER BY seq
LIMIT ?
