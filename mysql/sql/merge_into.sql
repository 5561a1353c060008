-- A merge's destination (locked and checked held by this transaction)
-- takes the summed lines: a new revision that kept its expiry (edit_ttl 0).
-- ? lines json, ? shop, ? checkout.
UPDATE holds
SET cart = ?, revision = revision + 1, edit_ttl = 0
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
