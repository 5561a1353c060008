-- ER_DUP_ENTRY: a concurrent retry recorded it first. ? shop, ? change id,
-- ? request, ? level, ? now.
INSERT INTO stock_changes (shop_id, change_id, request, level, created_at)
VALUES (?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))
