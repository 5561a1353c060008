-- The merged checkout's reserved lines, once added to the destination's
-- (merge_lines.sql). ? shop, ? source checkout.
DELETE FROM reserved_quantities WHERE shop_id = ? AND checkout_id = ?
