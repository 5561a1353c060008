-- Lock the counter rows of a combined batch's keys, in key and slot order
-- (the order every path that locks several counter rows uses), and return
-- their units: of a deep key, the row of the batch's stripe only (each
-- running batch of a client has its own: combine.go), with the units of
-- the key's other rows (not locked: read as of this statement, a hint
-- that a batch on another stripe may grant what this one cannot); of a
-- shallow key (one batch of it at a time), every row.
-- A top-level SELECT … FOR UPDATE: under READ COMMITTED it waits for a
-- concurrent writer and returns the row as that writer left it.
-- $1 shops, $2 items, $3 locations (each key once), $4 stripe, $5 every:
-- the key is shallow. The arrays are read through subqueries so that a
-- custom plan cannot see their length: the cached generic plan is used
-- instead of planning every batch (as sellable.sql).
SELECT ic.shop_id, ic.inventory_item_id, ic.location_id, ic.units,
       CASE WHEN k.every THEN 0 ELSE
       (SELECT coalesce(sum(o.units), 0) FROM inventory_counters o
         WHERE o.shop_id = ic.shop_id AND o.inventory_item_id = ic.inventory_item_id
           AND o.location_id = ic.location_id AND o.slot <> $4::int) END::int AS other
FROM inventory_counters ic
JOIN unnest((SELECT $1::bigint[]), (SELECT $2::bigint[]), (SELECT $3::bigint[]), (SELECT $5::boolean[]))
     AS k(shop_id, item, location, every)
  ON ic.shop_id = k.shop_id AND ic.inventory_item_id = k.item AND ic.location_id = k.location
WHERE ic.slot = $4::int OR k.every
ORDER BY ic.shop_id, ic.inventory_item_id, ic.location_id, ic.slot
FOR UPDATE OF ic
