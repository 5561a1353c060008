-- Every key's accounting: available, held, pooled and the sum of its audit
-- trail. Run in a read-only REPEATABLE READ transaction with
-- invariant_holds.sql, so both read one snapshot.
SELECT k.shop_id, k.inventory_item_id, k.location_id,
       COALESCE(l.available, 0),
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                 WHERE r.shop_id = k.shop_id AND r.inventory_item_id = k.inventory_item_id
                   AND r.location_id = k.location_id), 0),
       (SELECT COUNT(*) FROM reservation_units u
         WHERE u.shop_id = k.shop_id AND u.inventory_item_id = k.inventory_item_id
           AND u.location_id = k.location_id)
     + COALESCE((SELECT SUM(c.units) FROM inventory_counters c
                 WHERE c.shop_id = k.shop_id AND c.inventory_item_id = k.inventory_item_id
                   AND c.location_id = k.location_id), 0),
       COALESCE((SELECT SUM(g.delta) FROM inventory_ledger g
                 WHERE g.shop_id = k.shop_id AND g.inventory_item_id = k.inventory_item_id
                   AND g.location_id = k.location_id), 0),
       COALESCE(l.safety, 0)
FROM (
    SELECT shop_id, inventory_item_id, location_id FROM inventory_levels
    UNION SELECT shop_id, inventory_item_id, location_id FROM reserved_quantities
    UNION SELECT shop_id, inventory_item_id, location_id FROM reservation_units
    UNION SELECT shop_id, inventory_item_id, location_id FROM inventory_counters
) k
LEFT JOIN inventory_levels l
       ON l.shop_id = k.shop_id AND l.inventory_item_id = k.inventory_item_id AND l.location_id = k.location_id
ORDER BY 1, 2, 3
