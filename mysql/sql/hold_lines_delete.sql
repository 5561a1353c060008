-- ? shop, ? checkout.
DELETE FROM reserved_quantities WHERE shop_id = ? AND checkout_id = ?
