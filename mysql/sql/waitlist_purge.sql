-- Purge a batch of ended waits older than the retention window.
-- ? now, ? retention µs, ? batch size.
DELETE FROM waiters
WHERE status <> 'waiting'
  AND ended_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY ended_at
LIMIT ?
