-- How long until the nearest held hold expires, in µs (NULL: none held;
-- negative: one is already due). One probe of the holds_expiry index.
-- $1 now (NULL: database clock).
SELECT (extract(epoch FROM min(expires_at) - coalesce($1::timestamptz, clock_timestamp())) * 1e6)::bigint
FROM holds
WHERE status = 'held'
