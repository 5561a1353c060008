-- Audit entries for claimed lines, with each key's available after,
-- marked as a claim's (a hold.claimed event, not a stock.changed one).
-- ? reason, ? reference, ? now, ? lines (JSON), ? shop.
INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference, created_at, claim)
SELECT l.shop_id, l.inventory_item_id, l.location_id, -j.qty, l.available, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)), TRUE
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id',
         qty  INT    PATH '$.quantity')) j
STRAIGHT_JOIN inventory_levels l
  ON l.shop_id = ? AND l.inventory_item_id = j.item AND l.location_id = j.loc
ORDER BY j.n
