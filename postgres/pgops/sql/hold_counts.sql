-- Hold throughput: cumulative inserts into holds (one per new hold) and
-- updates (claims, releases, expiries, extensions) from the statistics
-- system, active holds, and holds that ended after $1 by outcome.
SELECT coalesce((SELECT n_tup_ins FROM pg_stat_user_tables WHERE relid = 'holds'::regclass), 0)::bigint,
       (SELECT count(*) FROM holds WHERE status = 'held')::bigint,
       (SELECT count(*) FROM holds WHERE status = 'claimed' AND ended_at > $1::timestamptz)::bigint,
       (SELECT count(*) FROM holds WHERE status = 'released' AND ended_at > $1::timestamptz)::bigint,
       (SELECT count(*) FROM holds WHERE status = 'expired' AND ended_at > $1::timestamptz)::bigint,
       clock_timestamp()
