-- The buyer hash of a checkout: its hold's, or, without a hold, its wait's
-- (NULL: no buyer). ? shop, ? checkout, ? shop, ? checkout.
SELECT COALESCE(
    (SELECT buyer_hash FROM holds WHERE shop_id = ? AND checkout_id = ?),
    (SELECT buyer_hash FROM waiters WHERE shop_id = ? AND checkout_id = ?))
