-- Deduct a combined claim batch's lines (claimcombine.go): each key's
-- inventory_levels row written once, by the sum of its lines, guarded by
-- available >= that sum as claim_line.sql guards one line. The keys come
-- in key order, and the rows are locked in the order read. Fewer rows
-- affected than keys: a key lacks the stock (over-committed) or has no
-- level, and the batch rolls back. STRAIGHT_JOIN and the forced primary key:
-- each level row found by its key, never by a scan that would lock or wait
-- for other keys' rows (see take_pool_delete.sql). ? keys as JSON [[shop, item, location,
-- total], …], ? now.
UPDATE JSON_TABLE(?, '$[*]' COLUMNS (
         shop  BIGINT PATH '$[0]',
         item  BIGINT PATH '$[1]',
         loc   BIGINT PATH '$[2]',
         total INT    PATH '$[3]')) j
STRAIGHT_JOIN inventory_levels v FORCE INDEX (PRIMARY)
  ON v.shop_id = j.shop AND v.inventory_item_id = j.item AND v.location_id = j.loc
SET v.available = v.available - j.total, v.updated_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE v.available >= j.total
