-- What a buyer already has of each item: units in holds still held (expired
-- but unswept ones included: they are still claimable) plus units claimed
-- within the item's window (0: every claim on record), this checkout
-- excluded. Run after the buyer's locks, so its snapshot sees every hold of
-- the buyer that committed before them.
-- $1 shop, $2 buyer hash, $3 checkout, $4 items, $5 windows µs, $6 now.
SELECT k.item,
       (SELECT coalesce(sum((e->>'quantity')::int), 0)
        FROM holds h, jsonb_array_elements(h.lines) e
        WHERE h.shop_id = $1::bigint AND h.buyer_hash = $2::bytea AND h.checkout_id <> $3::uuid
          AND (e->>'item_id')::bigint = k.item
          AND (h.status = 'held'
               OR (h.status = 'claimed'
                   AND (k.win = 0 OR h.ended_at > t.now - k.win * interval '1 microsecond'))))::int
FROM unnest($4::bigint[], $5::bigint[]) WITH ORDINALITY AS k(item, win, n),
     (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) t
ORDER BY k.n
