-- One key's ledger and buffer state from one snapshot.
-- $1 shop, $2 item, $3 location, $4 default strategy, $5 default pool cap.
SELECT l.available IS NOT NULL,
       coalesce(l.available, 0)::int,
       (SELECT coalesce(sum(r.held), 0) FROM held_counts r
         WHERE r.shop_id = $1::bigint AND r.inventory_item_id = $2::bigint AND r.location_id = $3::bigint)::int,
       (SELECT count(*) FROM reservation_units u
         WHERE u.shop_id = $1::bigint AND u.inventory_item_id = $2::bigint AND u.location_id = $3::bigint)::int,
       (SELECT coalesce(sum(c.units), 0) FROM inventory_counters c
         WHERE c.shop_id = $1::bigint AND c.inventory_item_id = $2::bigint AND c.location_id = $3::bigint)::int,
       coalesce(l.strategy, $4::text),
       coalesce(l.pool_cap, $5::int),
       coalesce(l.safety, 0)::int,
       -- Whether the key has waiters (waitlist.go): nothing is sellable
       -- to a new buyer then.
       EXISTS (SELECT 1 FROM waiter_lines w
               WHERE w.shop_id = $1::bigint AND w.inventory_item_id = $2::bigint AND w.location_id = $3::bigint)
       -- or whose drop is open (engine/drop.go).
       OR EXISTS (SELECT 1 FROM drops d
                  WHERE d.shop_id = $1::bigint AND d.inventory_item_id = $2::bigint
                    AND d.location_id = $3::bigint AND d.state = 'open')
FROM (SELECT 1) one
LEFT JOIN inventory_levels l
       ON l.shop_id = $1::bigint AND l.inventory_item_id = $2::bigint AND l.location_id = $3::bigint
