-- Audit entries for a combined claim batch's lines (claimcombine.go), as
-- ledger_lines.sql writes one claim's: one entry per line in the order
-- given, under its checkout, marked as a claim's (a hold.claimed event, not
-- a stock.changed one), available_after running down per key from what the
-- key had before the batch's deduction to what it has after.
-- ? reason, ? now, ? lines as JSON [[shop, item, location, quantity,
-- reference], …].
INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference, created_at, claim)
SELECT l.shop_id, l.inventory_item_id, l.location_id, -j.qty,
       l.available
         + SUM(j.qty) OVER (PARTITION BY j.shop, j.item, j.loc)
         - SUM(j.qty) OVER (PARTITION BY j.shop, j.item, j.loc ORDER BY j.n ROWS UNBOUNDED PRECEDING),
       ?, j.ref, COALESCE(?, UTC_TIMESTAMP(6)), TRUE
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT      PATH '$[0]',
         item BIGINT      PATH '$[1]',
         loc  BIGINT      PATH '$[2]',
         qty  INT         PATH '$[3]',
         ref  VARCHAR(36) PATH '$[4]')) j
STRAIGHT_JOIN inventory_levels l
  ON l.shop_id = j.shop AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
