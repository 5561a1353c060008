-- Create a checkout's hold and its lines in one statement. Creates nothing
-- (no row returned) when the shop's checkout already has a hold or an
-- outcome; a concurrent create of the same checkout waits here for the
-- other transaction to finish, so two retries never both keep units.
-- $1 checkout, $2 shop, $3 lines json, $4 ttl µs, $5 lifetime µs,
-- $6 now (NULL: database clock), $7 items, $8 locations, $9 quantities.
WITH h AS (
    INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
    SELECT $1::uuid, $2::bigint, 'held', $3::jsonb, t.now,
           t.now + $4::bigint * interval '1 microsecond',
           t.now + $5::bigint * interval '1 microsecond'
    FROM (SELECT coalesce($6::timestamptz, clock_timestamp()) AS now) t
    ON CONFLICT (shop_id, checkout_id) DO NOTHING
    RETURNING checkout_id, shop_id, created_at, expires_at, deadline
), l AS (
    INSERT INTO reserved_quantities
        (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
    SELECT h.shop_id, x.item, x.location, h.checkout_id, x.qty, h.expires_at, h.created_at
    FROM h, unnest($7::bigint[], $8::bigint[], $9::int[]) AS x(item, location, qty)
    RETURNING 1
)
SELECT created_at, expires_at, deadline FROM h
