-- Up to ? endpoints that are due, oldest due first, locked, skipping those
-- another deliverer is leasing right now: lease.sql then leases each. Due:
-- behind its shop's last sequenced cursor (it has events to deliver), not
-- leased by a live deliverer, not waiting for a backoff. next_at is when
-- the endpoint became due (unlease.sql puts a served endpoint at the back
-- of the line; failed.sql puts it after its backoff), so every endpoint
-- with events is served in turn, whatever their number. The subquery's
-- rows are not locked (a locking read locks a nested subquery's rows only
-- with its own locking clause).
SELECT w.id, w.shop_id, w.url, w.secret, w.`cursor`, w.attempts, w.first_failed_at, w.lease_token
FROM webhook_endpoints w
WHERE w.`cursor` < (SELECT s.last_seq FROM holdfast_event_shops s WHERE s.shop_id = w.shop_id)
  AND (w.leased_until IS NULL OR w.leased_until < UTC_TIMESTAMP(6))
  AND COALESCE(w.next_at, w.created_at) <= UTC_TIMESTAMP(6)
  -- a shop being moved here or away is not this pod's to deliver: its
  -- rows are fenced (migration 15's guard would refuse lease.sql's write
  -- and with it the whole lease)
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = w.shop_id)
  AND IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', w.shop_id)) IS NULL
ORDER BY COALESCE(w.next_at, w.created_at), w.id
LIMIT ?
FOR UPDATE SKIP LOCKED
