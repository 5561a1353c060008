-- An ended wait's cart. ? shop, ? checkout.
SELECT cart FROM waiters WHERE shop_id = ? AND checkout_id = ?
