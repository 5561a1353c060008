-- Move a hold from one status to another: one statement guarded by the
-- status it expects. ? to, ? now, ? shop, ? checkout, ? from.
UPDATE holds SET status = ?, ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = ?
