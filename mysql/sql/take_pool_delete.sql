-- Delete the pool rows a take locked. ? taken rows as JSON [[item, location,
-- id], …], ? shop. The rows are already locked by this transaction.
-- STRAIGHT_JOIN keeps JSON_TABLE first, so each row is found by its primary
-- key: left to itself the optimizer scans the shop's range of the table, and
-- a DELETE that scans waits for (and deadlocks on) rows other reservations
-- hold (TestTakeLocksOnlyItsRows).
DELETE u FROM JSON_TABLE(?, '$[*]' COLUMNS (
         item BIGINT PATH '$[0]',
         loc  BIGINT PATH '$[1]',
         id   BIGINT PATH '$[2]')) j
STRAIGHT_JOIN reservation_units u
  ON u.shop_id = ? AND u.inventory_item_id = j.item AND u.location_id = j.loc AND u.id = j.id
