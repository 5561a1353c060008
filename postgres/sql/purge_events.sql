-- Delete one batch of sequenced events older than the event retention.
-- $1 now (NULL: database clock), $2 retention µs, $3 batch.
-- The cutoff is a scalar subquery, evaluated once (an InitPlan), so that it
-- bounds the index scan: clock_timestamp() is volatile, and compared directly
-- it is a filter applied to every row of the index: each call would read
-- every sequenced event.
DELETE FROM holdfast_events
WHERE id IN (
    SELECT id FROM holdfast_events
    WHERE seq IS NOT NULL
      AND created_at < (SELECT coalesce($1::timestamptz, clock_timestamp()) - $2::bigint * interval '1 microsecond')
    ORDER BY created_at
    LIMIT $3::int
)
