-- Every table's primary key columns, in key order. A table whose primary
-- key includes shop_id can take another pod's rows of a shop without
-- colliding with this pod's own.
SELECT TABLE_NAME, COLUMN_NAME
FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = 'PRIMARY'
ORDER BY TABLE_NAME, SEQ_IN_INDEX
