-- Why extend_hold changed nothing, with the row locked.
-- ? now, ? ttl µs, ? shop, ? checkout.
SELECT status, COALESCE(?, UTC_TIMESTAMP(6)) + INTERVAL ? MICROSECOND <= deadline
FROM holds WHERE shop_id = ? AND checkout_id = ?
FOR UPDATE
