-- ? expires_at, ? shop, ? checkout.
UPDATE reserved_quantities SET expires_at = ? WHERE shop_id = ? AND checkout_id = ?
