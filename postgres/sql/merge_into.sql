-- A merge's destination (locked and checked held by this transaction)
-- takes the summed lines: a new revision that kept its expiry (edit_ttl 0).
-- $1 checkout, $2 shop, $3 lines json.
UPDATE holds
SET lines = $3::jsonb, revision = revision + 1, edit_ttl = 0
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
