-- A bundle's components in the order given. $1 shop, $2 bundle.
SELECT component_id, quantity FROM bundle_components
WHERE shop_id = $1::bigint AND bundle_id = $2::bigint
ORDER BY position
