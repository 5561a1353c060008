-- Delete the in-flight mark this transaction just wrote (its lock stays).
-- ? shop, ? checkout.
DELETE FROM reserve_inflight WHERE shop_id = ? AND checkout_id = ?
