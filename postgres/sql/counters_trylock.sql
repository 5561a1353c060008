-- Lock the counter rows of keys without waiting, for a refill that must
-- never block (after a release or a sweep): returns the indexes (1-based)
-- of the keys all of whose counter rows are now locked by this
-- transaction. A key with a row another transaction holds (a caller's
-- ReserveTx doing work before its commit) is left to the replenisher.
-- Used under the keys' advisory locks. $1 shops, $2 items, $3 locations.
SELECT k.n::int
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(shop_id, item, location, n)
WHERE (SELECT count(*) FROM inventory_counters c
        WHERE c.shop_id = k.shop_id AND c.inventory_item_id = k.item AND c.location_id = k.location)
    = (SELECT count(*) FROM (
        SELECT 1 FROM inventory_counters c
        WHERE c.shop_id = k.shop_id AND c.inventory_item_id = k.item AND c.location_id = k.location
        ORDER BY c.slot
        FOR UPDATE SKIP LOCKED) l)
ORDER BY k.n
