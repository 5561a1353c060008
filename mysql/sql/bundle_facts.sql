-- What SetBundle must know of a definition, under the shop's bundle lock:
-- the bundle's id has a key of its own; a bundle it is a component of (0:
-- none); a component that is a bundle (0: none); the shop's other bundles.
-- ? shop, ? bundle, ? shop, ? bundle, ? shop, ? components (JSON array of
-- ids), ? shop, ? bundle.
SELECT EXISTS (SELECT 1 FROM inventory_levels l WHERE l.shop_id = ? AND l.inventory_item_id = ?),
       COALESCE((SELECT MIN(b.bundle_id) FROM bundle_components b
                 WHERE b.shop_id = ? AND b.component_id = ?), 0),
       COALESCE((SELECT MIN(b.bundle_id) FROM bundle_components b
                 WHERE b.shop_id = ? AND b.bundle_id IN
                       (SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) j)), 0),
       (SELECT COUNT(DISTINCT b.bundle_id) FROM bundle_components b
        WHERE b.shop_id = ? AND b.bundle_id <> ?)
