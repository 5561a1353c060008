-- Why an extension updated nothing: the hold's status, and whether now + ttl
-- would still be within its deadline. Read in a snapshot taken after the
-- UPDATE, which may see a hold the UPDATE could not (its reservation was
-- committing meanwhile). $1 checkout, $2 shop, $3 ttl µs, $4 now.
SELECT status,
       coalesce($4::timestamptz, clock_timestamp()) + $3::bigint * interval '1 microsecond' <= deadline
FROM holds
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint
