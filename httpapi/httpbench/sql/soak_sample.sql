-- The service soak's look at the database, once a sample, beside the load:
-- holds still held (an index-only scan of the partial index holds_expiry),
-- the age in seconds of the oldest expiry the sweeper has not taken yet (0
-- when none is overdue), and the holds table's size with its indexes and
-- TOAST. Read only: the bench never writes holdfast's tables.
SELECT
    (SELECT count(*) FROM holds WHERE status = 'held'),
    coalesce((SELECT extract(epoch FROM now() - min(expires_at))
              FROM holds WHERE status = 'held' AND expires_at < now()), 0)::float8,
    pg_total_relation_size('holds')
