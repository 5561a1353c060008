-- The sold-out hint in one statement, so one snapshot: whether the shop's
-- checkout has a hold or outcome, and available and held per line. A retry
-- whose first attempt's hold is visible here sees it (and takes the normal
-- path to it); one whose hold is not visible does not count its units as
-- held either. An attempt still in flight is found before this read
-- (sold_out_inflight.sql). $1 shop, $2 checkout, $3 items, $4 locations.
-- A checkout with a wait (waitlist.go) is known too: the normal path
-- answers its wait.
SELECT EXISTS (SELECT 1 FROM holds h WHERE h.shop_id = $1::bigint AND h.checkout_id = $2::uuid)
       OR EXISTS (SELECT 1 FROM waiters w WHERE w.shop_id = $1::bigint AND w.checkout_id = $2::uuid),
       -- safety stock is not for sale; a key with waiters sells nothing to a
       -- new buyer (sellable 0, as Level and sellable.sql say)
       CASE WHEN EXISTS (SELECT 1 FROM waiter_lines w
                         WHERE w.shop_id = $1::bigint AND w.inventory_item_id = k.item AND w.location_id = k.location)
            THEN 0
            ELSE coalesce(l.available, 0) - coalesce(l.safety, 0) END::int,
       (SELECT coalesce(sum(r.held), 0)
        FROM held_counts r
        WHERE r.shop_id = $1::bigint AND r.inventory_item_id = k.item AND r.location_id = k.location)::int
FROM unnest($3::bigint[], $4::bigint[]) WITH ORDINALITY AS k(item, location, n)
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
ORDER BY k.n
