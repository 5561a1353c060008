-- One batch of stock-change outcomes past retention. ? now, ? retention µs,
-- ? batch.
DELETE FROM stock_changes
WHERE created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY created_at
LIMIT ?
