-- Every bundle of a shop, each's components in the order given: the
-- engine's cache of definitions. ? shop.
SELECT bundle_id, component_id, quantity FROM bundle_components
WHERE shop_id = ?
ORDER BY bundle_id, position
