-- The per-buyer limits of a cart's items, in item order, each with what the
-- buyer already has of the item: units in holds still held (expired but
-- unswept ones included: they are still claimable) plus units claimed
-- within the limit's window (0: every claim on record), this checkout
-- excluded. Run after the buyer's locks (same pipeline, next statement), so
-- its snapshot sees every hold of the buyer that committed before them.
-- $1 shop, $2 buyer hash, $3 checkout, $4 items, $5 now.
SELECT b.inventory_item_id, b.buyer_limit,
       (SELECT coalesce(sum((e->>'quantity')::int), 0)
        FROM holds h, jsonb_array_elements(h.lines) e
        WHERE h.shop_id = $1::bigint AND h.buyer_hash = $2::bytea AND h.checkout_id <> $3::uuid
          AND (e->>'item_id')::bigint = b.inventory_item_id
          AND (h.status = 'held'
               OR (h.status = 'claimed'
                   AND (b.window_us = 0 OR h.ended_at > t.now - b.window_us * interval '1 microsecond'))))::int
FROM buyer_limits b,
     (SELECT coalesce($5::timestamptz, clock_timestamp()) AS now) t
WHERE b.shop_id = $1::bigint AND b.inventory_item_id = ANY($4::bigint[])
ORDER BY b.inventory_item_id
