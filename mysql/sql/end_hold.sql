-- Move a hold from one status to another: one statement guarded by the
-- status it expects. Releasing a hold past its expiry ends it as expired
-- (what the sweeper would have done): the release answers like one of an
-- expired hold. ? to, ? now, ? to, ? now, ? shop, ? checkout, ? from.
UPDATE holds
SET status = CASE WHEN ? = 'released' AND expires_at < COALESCE(?, UTC_TIMESTAMP(6))
                  THEN 'expired' ELSE ? END,
    ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = ?
