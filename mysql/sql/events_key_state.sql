-- Whether each key is sold out now (nothing sellable to a new buyer:
-- available - safety - held <= 0, or the key has waiters), and what was
-- last reported for it (NULL: never). ? keys [[shop, item, location], …].
SELECT l.shop_id, l.inventory_item_id, l.location_id, l.available,
       l.available - l.safety - COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                                          WHERE r.shop_id = l.shop_id AND r.inventory_item_id = l.inventory_item_id
                                            AND r.location_id = l.location_id), 0) <= 0
       OR EXISTS (SELECT 1 FROM waiter_lines w
                  WHERE w.shop_id = l.shop_id AND w.inventory_item_id = l.inventory_item_id
                    AND w.location_id = l.location_id),
       e.sold_out
FROM JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$[0]', item BIGINT PATH '$[1]', loc BIGINT PATH '$[2]')) j
STRAIGHT_JOIN inventory_levels l ON l.shop_id = j.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
LEFT JOIN holdfast_event_keys e
       ON e.shop_id = l.shop_id AND e.inventory_item_id = l.inventory_item_id AND e.location_id = l.location_id
ORDER BY 1, 2, 3
