-- One key's ledger and buffer state from one snapshot (one statement under
-- READ COMMITTED: one read view). Refills compute what they may add from
-- this, after taking the key's lock row.
-- ? default strategy, ? default pool cap, ? shop, ? item, ? location.
SELECT l.available IS NOT NULL,
       COALESCE(l.available, 0),
       COALESCE((SELECT SUM(r.quantity) FROM reserved_quantities r
                 WHERE r.shop_id = k.shop AND r.inventory_item_id = k.item AND r.location_id = k.loc), 0),
       (SELECT COUNT(*) FROM reservation_units u
         WHERE u.shop_id = k.shop AND u.inventory_item_id = k.item AND u.location_id = k.loc),
       COALESCE((SELECT c.units FROM inventory_counters c
                 WHERE c.shop_id = k.shop AND c.inventory_item_id = k.item AND c.location_id = k.loc), 0),
       COALESCE(l.strategy, ?),
       COALESCE(l.pool_cap, ?),
       -- Whether the key has waiters (waitlist.go): refills add nothing.
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = k.shop AND w.inventory_item_id = k.item AND w.location_id = k.loc)
       -- nor while its drop is open (engine/drop.go).
       OR EXISTS (SELECT 1 FROM drops d
                  WHERE d.shop_id = k.shop AND d.inventory_item_id = k.item
                    AND d.location_id = k.loc AND d.state = 'open'),
       COALESCE(l.safety, 0)
FROM (SELECT ? AS shop, ? AS item, ? AS loc) k
LEFT JOIN inventory_levels l
       ON l.shop_id = k.shop AND l.inventory_item_id = k.item AND l.location_id = k.loc
