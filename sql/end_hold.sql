-- Move a hold from one state to another: the one statement, guarded by the
-- state it expects, that decides a hold's fate. The row lock serialises
-- claim, release, extend and sweep of one checkout.
-- $1 checkout, $2 shop, $3 expected status, $4 new status, $5 now.
UPDATE holds
SET status = $4::text, ended_at = coalesce($5::timestamptz, clock_timestamp())
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = $3::text
RETURNING lines, created_at, expires_at, deadline, ended_at
