-- The waits on the given keys that can never be served: a line asks more
-- of the key than its available stock less its safety stock — the bound a
-- wait is admitted under (held units may come back, claimed ones never
-- do, and the safety stock is never sold). ? keys JSON [[shop, item, location], …], ? limit.
SELECT DISTINCT l.shop_id, l.checkout_id
FROM JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$[0]', item BIGINT PATH '$[1]', loc BIGINT PATH '$[2]')) j
STRAIGHT_JOIN waiter_lines l
        ON l.shop_id = j.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
LEFT JOIN inventory_levels v
       ON v.shop_id = j.shop AND v.inventory_item_id = j.item AND v.location_id = j.loc
WHERE l.quantity > COALESCE(v.available, 0) - COALESCE(v.safety, 0)
LIMIT ?
