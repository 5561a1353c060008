-- The buyer hash of a checkout's hold (NULL: no buyer). ? shop, ? checkout.
SELECT buyer_hash FROM holds WHERE shop_id = ? AND checkout_id = ?
