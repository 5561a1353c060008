-- One batch of outcome records past retention. ? now, ? retention µs, ? batch.
DELETE FROM holds
WHERE status <> 'held' AND ended_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY ended_at
LIMIT ?
