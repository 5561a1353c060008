-- The pre-order settings and counts of a shop's keys (shop, $2[i], $3[i])
-- that have one: units held on the companion key (held_counts) and owed.
-- $1 shop, $2 items, $3 locations.
SELECT p.inventory_item_id, p.location_id, p.cap, p.expected_at,
       coalesce((SELECT sum(h.held) FROM held_counts h
                  WHERE h.shop_id = p.shop_id AND h.inventory_item_id = p.inventory_item_id
                    AND h.location_id = -p.location_id), 0)::bigint,
       coalesce((SELECT sum(o.units) FROM preorder_owed o
                  WHERE o.shop_id = p.shop_id AND o.inventory_item_id = p.inventory_item_id
                    AND o.location_id = p.location_id), 0)::bigint
FROM unnest($2::bigint[], $3::bigint[]) AS k(item, loc)
JOIN preorders p ON p.shop_id = $1::bigint AND p.inventory_item_id = k.item AND p.location_id = k.loc
ORDER BY 1, 2
