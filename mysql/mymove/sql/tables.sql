-- The tables holding shops' rows (a shop_id column), with their columns in
-- order (generated ones flagged: they are computed again on insert), each
-- column's type and its place in the primary key (0: not in it). A table
-- whose primary key includes shop_id can take another pod's rows of a
-- shop without colliding with this pod's own. api_keys (global, looked up
-- before the shop is known) and the fences themselves are not a shop's
-- data.
SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.EXTRA,
       COALESCE((SELECT s.SEQ_IN_INDEX FROM information_schema.STATISTICS s
                 WHERE s.TABLE_SCHEMA = c.TABLE_SCHEMA AND s.TABLE_NAME = c.TABLE_NAME
                   AND s.INDEX_NAME = 'PRIMARY' AND s.COLUMN_NAME = c.COLUMN_NAME), 0)
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
WHERE c.TABLE_SCHEMA = DATABASE()
  AND c.TABLE_NAME NOT IN ('api_keys', 'holdfast_shop_fences')
  AND EXISTS (SELECT 1 FROM information_schema.COLUMNS k
              WHERE k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = 'shop_id')
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION
