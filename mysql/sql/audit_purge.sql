-- One batch of audit entries past their retention, oldest first through
-- audit_log_created. ? now, ? retention µs, ? batch.
DELETE FROM audit_log
WHERE created_at < COALESCE(?, UTC_TIMESTAMP(6)) - INTERVAL ? MICROSECOND
ORDER BY created_at
LIMIT ?
