-- The buyer hash of a checkout: its hold's, or, without a hold, its wait's
-- (NULL: no buyer). $1 shop, $2 checkout.
SELECT coalesce(
    (SELECT buyer_hash FROM holds WHERE shop_id = $1::bigint AND checkout_id = $2::uuid),
    (SELECT buyer_hash FROM waiters WHERE shop_id = $1::bigint AND checkout_id = $2::uuid))
