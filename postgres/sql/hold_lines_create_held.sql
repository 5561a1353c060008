-- Create a new hold's lines, once their units are taken, with the hold
-- row's times read from the row: hold_lines_create.sql for a pipeline
-- (reserve.go, reserveTxPipelined), which sends this before the hold
-- row's insert has answered. The strict insert before it (hold_insert.sql,
-- $7) guarantees the row is this transaction's new one.
-- $1 checkout, $2 shop, $3 items, $4 locations, $5 quantities.
INSERT INTO reserved_quantities
    (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at, created_at)
SELECT $2::bigint, x.item, x.location, $1::uuid, x.qty, h.expires_at, h.created_at
FROM holds h, unnest($3::bigint[], $4::bigint[], $5::int[]) AS x(item, location, qty)
WHERE h.shop_id = $2::bigint AND h.checkout_id = $1::uuid
