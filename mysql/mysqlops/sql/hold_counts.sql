-- Hold throughput for top: holds created after ? (holds are kept
-- OutcomeRetention after they end, so the scan is bounded), active holds,
-- holds that ended after ? by outcome, and the database's clock.
SELECT (SELECT COUNT(*) FROM holds WHERE created_at > ?),
       (SELECT COUNT(*) FROM holds WHERE status = 'held'),
       (SELECT COUNT(*) FROM holds WHERE status = 'claimed' AND ended_at > ?),
       (SELECT COUNT(*) FROM holds WHERE status = 'released' AND ended_at > ?),
       (SELECT COUNT(*) FROM holds WHERE status = 'expired' AND ended_at > ?),
       UTC_TIMESTAMP(6)
