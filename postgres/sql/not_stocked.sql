-- Which keys of a short reservation never had stock set, in the given
-- order: a mistyped id must not read as a sell-out (not_stocked). Never
-- stocked: no level row, or one a strategy or safety stock made (available
-- 0) with no stock change in the ledger.
-- $1 shop, $2 items, $3 locations.
SELECT NOT EXISTS (SELECT 1 FROM inventory_levels l
                   WHERE l.shop_id = $1::bigint AND l.inventory_item_id = k.item AND l.location_id = k.location
                     AND (l.available > 0
                          OR EXISTS (SELECT 1 FROM inventory_ledger g
                                     WHERE g.shop_id = $1::bigint AND g.inventory_item_id = k.item
                                       AND g.location_id = k.location)))
FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(item, location, n)
ORDER BY k.n
