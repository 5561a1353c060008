-- Insert a bundle's components (after bundle_delete.sql, in one batch).
-- $1 shop, $2 bundle, $3 components, $4 their quantities, in the order
-- given.
INSERT INTO bundle_components (shop_id, bundle_id, component_id, quantity, position)
SELECT $1::bigint, $2::bigint, c.id, c.qty, c.n
FROM unnest($3::bigint[], $4::int[]) WITH ORDINALITY AS c(id, qty, n)
