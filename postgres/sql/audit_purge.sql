-- Delete a batch of the audit entries past their retention, oldest first
-- through audit_log_created.
-- $1 now (NULL: the database's clock), $2 retention in microseconds,
-- $3 batch size.
DELETE FROM audit_log
WHERE (shop_id, id) IN (
    SELECT shop_id, id FROM audit_log
    WHERE created_at < coalesce($1::timestamptz, clock_timestamp()) - make_interval(secs => $2::bigint / 1e6)
      AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = audit_log.shop_id OFFSET 0)
      AND pg_try_advisory_xact_lock_shared(1752139015, hashtext(audit_log.shop_id::text)) -- a shop a move is copying: the guard's lock, as in sweep_expire.sql
    ORDER BY created_at
    LIMIT $3::int
)
