-- Top up the allocation buffers of keys whose advisory locks the caller
-- holds. It reads pool, holds and available in this one statement, so from one
-- snapshot taken after the locks: a sweep, release or claim committing
-- meanwhile moves units between holds and buffers (or removes them from both
-- holds and available) without changing what this statement may add.
-- Every hold counts, expired or not: an unswept expired hold still owns its
-- units; held is the key's held_counts rows (migration 011), which in any
-- snapshot sum to its lines, so a few rows are read whatever its holds. The
-- amount added is least(cap - pooled, available - safety - held -
-- pooled): never units of the key's safety stock.
-- $1 shops, $2 items, $3 locations, $4 default strategy, $5 default pool cap,
-- $6 slots per slotted key, $7 stripes per batch key (strategies.go, rows). The arrays are read through subqueries so that
-- a custom plan cannot see their length: no custom plan then looks cheaper
-- than the cached generic one, which runtime partition pruning serves as
-- well, and the statement is not planned per call (planning it, over
-- reservation_units' partitions, cost several times its run;
-- docs/PERFORMANCE.md, "Costs of the commerce features").
WITH k AS (
    SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[]), (SELECT $3::bigint[])) AS k(shop_id, item, location)
), st AS (
    SELECT k.shop_id, k.item, k.location,
           coalesce(l.strategy, $4::text) AS strategy,
           CASE WHEN coalesce(l.strategy, $4::text) = 'pool'
                THEN coalesce(l.pool_cap, $5::int) ELSE 2147483647 END::bigint AS cap,
           coalesce(l.available, 0)::bigint AS available,
           coalesce(l.safety, 0)::bigint AS safety,
           (SELECT coalesce(sum(r.held), 0) FROM held_counts r
             WHERE r.shop_id = k.shop_id AND r.inventory_item_id = k.item
               AND r.location_id = k.location)::bigint AS held,
           (SELECT count(*) FROM reservation_units u
             WHERE u.shop_id = k.shop_id AND u.inventory_item_id = k.item
               AND u.location_id = k.location)
         + (SELECT coalesce(sum(c.units), 0) FROM inventory_counters c
             WHERE c.shop_id = k.shop_id AND c.inventory_item_id = k.item
               AND c.location_id = k.location)::bigint AS pooled
    FROM k
    LEFT JOIN inventory_levels l
           ON l.shop_id = k.shop_id AND l.inventory_item_id = k.item AND l.location_id = k.location
), plan AS (
    SELECT st.*,
           -- A key with waiters (waitlist.go) gets nothing: its units go
           -- to the waiting carts first. Safety stock is never buffered.
           CASE WHEN EXISTS (SELECT 1 FROM waiter_lines w
                              WHERE w.shop_id = st.shop_id AND w.inventory_item_id = st.item
                                AND w.location_id = st.location)
                  -- Nor a key whose drop is open (engine/drop.go).
                  OR EXISTS (SELECT 1 FROM drops d
                             WHERE d.shop_id = st.shop_id AND d.inventory_item_id = st.item
                               AND d.location_id = st.location AND d.state = 'open')
                THEN 0
                ELSE greatest(0, least(cap - pooled, available - safety - held - pooled)) END::int AS add,
           CASE strategy WHEN 'slots' THEN $6::int WHEN 'batch' THEN $7::int ELSE 1 END AS n
    FROM st
), pool_ins AS (
    INSERT INTO reservation_units (shop_id, inventory_item_id, location_id)
    SELECT p.shop_id, p.item, p.location
    FROM plan p, generate_series(1, p.add)
    WHERE p.strategy = 'pool' AND p.add > 0
    RETURNING 1
), counter_up AS (
    INSERT INTO inventory_counters AS c (shop_id, inventory_item_id, location_id, slot, units)
    SELECT p.shop_id, p.item, p.location, s.slot,
           p.add / p.n + CASE WHEN s.slot < p.add % p.n THEN 1 ELSE 0 END
    FROM plan p, generate_series(0, p.n - 1) AS s(slot)
    WHERE p.strategy <> 'pool' AND p.add > 0
    ORDER BY p.shop_id, p.item, p.location, s.slot
    ON CONFLICT (shop_id, inventory_item_id, location_id, slot)
    DO UPDATE SET units = c.units + EXCLUDED.units
    RETURNING 1
)
SELECT shop_id, item, location, add, available, held, pooled + add FROM plan
