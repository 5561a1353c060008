-- Lock the counter rows of every key an allocation may take from, in key
-- order (the keys arrive sorted; a STRAIGHT_JOIN from JSON_TABLE reads and
-- locks them in that order by primary key, never a scan of the shop), after
-- the lock rows and before any take, on the slow levels of an allocation
-- (the fast one reads lock-free). While they are locked no reservation
-- is in flight on these keys, so the sellable read that follows is what the
-- allocation can get (pool keys excepted).
-- ? keys (JSON, sorted), ? shop.
SELECT c.units
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id')) j
STRAIGHT_JOIN inventory_counters c
       ON c.shop_id = ? AND c.inventory_item_id = j.item AND c.location_id = j.loc
ORDER BY j.n
FOR UPDATE
