-- Lock every counter row (every slot) of the keys an allocation may take
-- from, in key and slot order (the order every path that locks several
-- counter rows uses), after the hold row and before any take, on the slow
-- levels of an allocation (the fast one reads lock-free). While they
-- are locked no other reservation takes from these keys and no reservation
-- is in flight on them, so the sellable snapshot that follows is what the
-- allocation can get (pool keys excepted: their rows are taken with SKIP
-- LOCKED and are not locked here). A top-level SELECT … FOR UPDATE waits for
-- a concurrent writer and sees the row as it left it.
-- $1 shop, $2 items, $3 locations (in key order).
SELECT ic.units
FROM inventory_counters ic
JOIN unnest($2::bigint[], $3::bigint[]) AS k(item, location)
  ON ic.inventory_item_id = k.item AND ic.location_id = k.location
WHERE ic.shop_id = $1::bigint
ORDER BY ic.inventory_item_id, ic.location_id, ic.slot
FOR UPDATE OF ic
