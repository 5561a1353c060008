-- The tables holding shops' rows (a shop_id column), with their columns in
-- order (generated ones flagged by EXTRA: they are computed again on
-- insert) and each column's type. api_keys (global, looked up before the
-- shop is known) and the fences themselves are not a shop's data.
SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.EXTRA
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
WHERE c.TABLE_SCHEMA = DATABASE()
  AND c.TABLE_NAME NOT IN ('api_keys', 'holdfast_shop_fences')
  AND c.TABLE_NAME IN (SELECT k.TABLE_NAME FROM information_schema.COLUMNS k
                       WHERE k.TABLE_SCHEMA = DATABASE() AND k.COLUMN_NAME = 'shop_id')
ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION
