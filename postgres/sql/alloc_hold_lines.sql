-- Record an allocated hold's resolved lines on its hold row, which the same
-- transaction created (hold_insert.sql) before it chose the locations.
-- $1 checkout, $2 shop, $3 lines json.
UPDATE holds SET lines = $3::jsonb
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
