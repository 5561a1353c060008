-- Move a hold from one state to another: the one statement, guarded by the
-- state it expects, that decides a hold's fate. The row lock serialises
-- claim, release, extend and sweep of one checkout. Releasing a hold past
-- its expiry ends it as expired (what the sweeper would have done): the
-- release answers like one of an expired hold.
-- $1 checkout, $2 shop, $3 expected status, $4 new status, $5 now.
UPDATE holds
SET status = CASE WHEN $4::text = 'released' AND expires_at < coalesce($5::timestamptz, clock_timestamp())
                  THEN 'expired' ELSE $4::text END,
    ended_at = coalesce($5::timestamptz, clock_timestamp())
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = $3::text
RETURNING status, lines, created_at, expires_at, deadline, ended_at, revision
