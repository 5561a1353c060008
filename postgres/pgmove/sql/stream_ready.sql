-- A streamed move's subscription on the target: its tables, those not
-- yet copied and caught up (srsubstate 'r' is ready), and the errors its
-- workers met (a sync or apply error retries forever: the mover stops).
SELECT count(r.srrelid),
       count(r.srrelid) FILTER (WHERE r.srsubstate <> 'r'),
       coalesce((SELECT st.sync_error_count + st.apply_error_count
                 FROM pg_stat_subscription_stats st WHERE st.subid = s.oid), 0)
FROM pg_subscription s
LEFT JOIN pg_subscription_rel r ON r.srsubid = s.oid
WHERE s.subname = $1 AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
GROUP BY s.oid
