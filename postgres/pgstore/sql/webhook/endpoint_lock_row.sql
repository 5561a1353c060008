-- Lock one of a shop's endpoints before its removal, so that the removal's
-- statement (a new snapshot, taken after the lock) counts every dead
-- letter the deliverer committed for it: the deliverer's next one waits
-- for the lock (its foreign key). $1 shop, $2 id.
SELECT id FROM webhook_endpoints WHERE shop_id = $1::bigint AND id = $2::bigint FOR UPDATE
