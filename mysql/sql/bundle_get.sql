-- A bundle's components in the order given. ? shop, ? bundle.
SELECT component_id, quantity FROM bundle_components
WHERE shop_id = ? AND bundle_id = ?
ORDER BY position
