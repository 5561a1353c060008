-- Remove a bundle's components. ? shop, ? bundle.
DELETE FROM bundle_components WHERE shop_id = ? AND bundle_id = ?
