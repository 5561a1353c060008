-- Every bundle of a shop, each's components in the order given: the
-- engine's cache of definitions. $1 shop.
SELECT bundle_id, component_id, quantity FROM bundle_components
WHERE shop_id = $1::bigint
ORDER BY bundle_id, position
