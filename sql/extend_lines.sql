-- Keep the lines' expiry in step with the hold's. $1 checkout, $2 expires_at.
UPDATE reserved_quantities SET expires_at = $2::timestamptz WHERE checkout_id = $1::uuid
