-- Whether a checkout has a hold or outcome. ? shop, ? checkout.
SELECT status FROM holds WHERE shop_id = ? AND checkout_id = ?
