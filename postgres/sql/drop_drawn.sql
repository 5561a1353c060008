-- End an open drop as drawn and record the entrants' ranks. $1 shop, $2
-- item, $3 location, $4 checkouts in lottery order, $5 now (NULL:
-- database clock).
WITH d AS (
    UPDATE drops SET state = 'drawn', drawn_at = coalesce($5::timestamptz, clock_timestamp())
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
      AND state = 'open'
    RETURNING 1
)
UPDATE drop_entries e SET draw_rank = o.n
FROM unnest($4::uuid[]) WITH ORDINALITY AS o(checkout, n)
WHERE e.shop_id = $1::bigint AND e.inventory_item_id = $2::bigint AND e.location_id = $3::bigint
  AND e.checkout_id = o.checkout AND EXISTS (SELECT 1 FROM d)
