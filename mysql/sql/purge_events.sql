-- One batch of sequenced events past the event retention.
-- ? now, ? retention µs, ? batch.
DELETE FROM holdfast_events
WHERE seq IS NOT NULL AND created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY created_at
LIMIT ?
