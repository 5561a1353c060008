-- Up to ? endpoints that are due (not leased by a live deliverer, not
-- waiting for a backoff), locked, skipping those another deliverer is
-- leasing right now: lease.sql then leases each.
SELECT id, shop_id, url, secret, `cursor`, attempts, first_failed_at
FROM webhook_endpoints
WHERE (leased_until IS NULL OR leased_until < UTC_TIMESTAMP(6))
  AND (next_at IS NULL OR next_at <= UTC_TIMESTAMP(6))
ORDER BY COALESCE(next_at, created_at), id
LIMIT ?
FOR UPDATE SKIP LOCKED
