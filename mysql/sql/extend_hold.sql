-- Move a held checkout's expiry to now + ttl, within its deadline.
-- ? now, ? ttl µs, ? shop, ? checkout, ? now, ? ttl µs.
UPDATE holds SET expires_at = COALESCE(?, UTC_TIMESTAMP(6)) + INTERVAL ? MICROSECOND
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
  AND COALESCE(?, UTC_TIMESTAMP(6)) + INTERVAL ? MICROSECOND <= deadline
