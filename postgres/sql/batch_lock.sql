-- Lock the counter rows of a combined batch's keys on its stripe (each
-- running batch of a client has its own: combine.go), in key order (the
-- order every path that locks several counter rows uses), and return
-- their units.
-- A top-level SELECT … FOR UPDATE: under READ COMMITTED it waits for a
-- concurrent writer and returns the row as that writer left it.
-- $1 shops, $2 items, $3 locations, $4 stripe; the arrays read through subqueries so that a
-- custom plan cannot see their length: the cached generic plan is used
-- instead of planning every batch (as sellable.sql).
SELECT ic.shop_id, ic.inventory_item_id, ic.location_id, ic.units
FROM inventory_counters ic
JOIN unnest((SELECT $1::bigint[]), (SELECT $2::bigint[]), (SELECT $3::bigint[])) AS k(shop_id, item, location)
  ON ic.shop_id = k.shop_id AND ic.inventory_item_id = k.item AND ic.location_id = k.location
WHERE ic.slot = $4::int
ORDER BY ic.shop_id, ic.inventory_item_id, ic.location_id
FOR UPDATE OF ic
