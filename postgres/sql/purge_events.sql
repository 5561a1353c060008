-- Delete one batch of sequenced events older than the event retention.
-- $1 now (NULL: database clock), $2 retention µs, $3 batch.
DELETE FROM holdfast_events
WHERE id IN (
    SELECT id FROM holdfast_events
    WHERE seq IS NOT NULL
      AND created_at < coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond'
    ORDER BY created_at
    LIMIT $3::int
)
