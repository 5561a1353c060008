-- Remove a bundle's components. $1 shop, $2 bundle.
DELETE FROM bundle_components WHERE shop_id = $1::bigint AND bundle_id = $2::bigint
