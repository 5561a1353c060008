-- Every key's accounting from one snapshot: available, held, pooled and the
-- sum of its audit trail. The invariant is pooled + held <= available; a key
-- whose holds alone exceed available (after a stock reduction) is
-- over-committed and must have an empty buffer.
WITH keys AS (
    SELECT shop_id, inventory_item_id, location_id FROM inventory_levels
    UNION SELECT shop_id, inventory_item_id, location_id FROM reserved_quantities
    UNION SELECT shop_id, inventory_item_id, location_id FROM reservation_units
    UNION SELECT shop_id, inventory_item_id, location_id FROM inventory_counters
)
SELECT k.shop_id, k.inventory_item_id, k.location_id,
       coalesce(l.available, 0)::bigint,
       (SELECT coalesce(sum(quantity), 0) FROM reserved_quantities r
         WHERE (r.shop_id, r.inventory_item_id, r.location_id) = (k.shop_id, k.inventory_item_id, k.location_id))::bigint,
       (SELECT count(*) FROM reservation_units u
         WHERE (u.shop_id, u.inventory_item_id, u.location_id) = (k.shop_id, k.inventory_item_id, k.location_id))
     + (SELECT coalesce(sum(units), 0) FROM inventory_counters c
         WHERE (c.shop_id, c.inventory_item_id, c.location_id) = (k.shop_id, k.inventory_item_id, k.location_id))::bigint,
       (SELECT coalesce(sum(delta), 0) FROM inventory_ledger g
         WHERE (g.shop_id, g.inventory_item_id, g.location_id) = (k.shop_id, k.inventory_item_id, k.location_id))::bigint,
       coalesce(l.safety, 0)::bigint
FROM keys k
LEFT JOIN inventory_levels l USING (shop_id, inventory_item_id, location_id)
ORDER BY 1, 2, 3
