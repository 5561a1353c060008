-- Whether a checkout has a hold or outcome, or a wait (waitlist.go).
-- ? shop, ? checkout, ? shop, ? checkout.
SELECT status FROM holds WHERE shop_id = ? AND checkout_id = ?
UNION ALL
SELECT status FROM waiters WHERE shop_id = ? AND checkout_id = ?
