-- The buyer hash of a checkout: its hold's, or, without a hold, its wait's
-- (NULL: no buyer; no row: neither). ? shop, ? checkout, ? shop, ? checkout.
SELECT buyer_hash FROM holds WHERE shop_id = ? AND checkout_id = ?
UNION ALL
SELECT w.buyer_hash FROM waiters w
LEFT JOIN holds h ON h.shop_id = w.shop_id AND h.checkout_id = w.checkout_id
WHERE w.shop_id = ? AND w.checkout_id = ? AND h.shop_id IS NULL
