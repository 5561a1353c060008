-- What a buyer already has of an item: units in held holds (expired but
-- unswept included: still claimable) plus units claimed within the window
-- (0: every claim on record), this checkout excluded. A consistent read
-- after the buyer's lock row: under READ COMMITTED its read view sees every
-- hold of the buyer committed before the lock.
-- ? shop, ? hash, ? checkout, ? item, ? window µs, ? now, ? window µs.
SELECT COALESCE(SUM(j.qty), 0)
FROM holds h
STRAIGHT_JOIN JSON_TABLE(h.cart, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         qty  INT    PATH '$.quantity')) j
WHERE h.shop_id = ? AND h.buyer_hash = ? AND h.checkout_id <> ? AND j.item = ?
  AND (h.status = 'held'
       OR (h.status = 'claimed'
           AND (? = 0 OR h.ended_at > COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND)))
