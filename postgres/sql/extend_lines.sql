-- Keep the lines' expiry in step with the hold's. $1 checkout, $2 expires_at,
-- $3 shop.
UPDATE reserved_quantities SET expires_at = $2::timestamptz
WHERE shop_id = $3::bigint AND checkout_id = $1::uuid
