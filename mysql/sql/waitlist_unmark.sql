-- Unmark the keys of an ended wait. ? shop, ? checkout.
DELETE FROM waiter_lines WHERE shop_id = ? AND checkout_id = ?
