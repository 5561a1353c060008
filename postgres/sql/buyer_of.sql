-- The buyer hash of a checkout's hold (NULL: no buyer). $1 shop, $2 checkout.
SELECT buyer_hash FROM holds WHERE shop_id = $1::bigint AND checkout_id = $2::uuid
