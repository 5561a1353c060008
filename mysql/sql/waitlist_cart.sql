-- An ended wait's cart and how it ended. ? shop, ? checkout.
SELECT cart, status FROM waiters WHERE shop_id = ? AND checkout_id = ?
