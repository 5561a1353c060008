-- Record a claimed checkout's pre-ordered lines as owed. ? shop,
-- ? checkout, ? the hold's creation, ? lines as JSON (companion, negative
-- locations).
INSERT INTO preorder_owed (shop_id, inventory_item_id, location_id, checkout_id, units, created_at)
SELECT ?, j.item, -j.loc, ?, j.qty, ?
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         item BIGINT PATH '$.item_id',
         loc  BIGINT PATH '$.location_id',
         qty  INT    PATH '$.quantity')) j
