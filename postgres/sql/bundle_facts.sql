-- What SetBundle must know of a definition, under the shop's bundle lock:
-- the bundle's id has a key of its own; a bundle it is a component of (0:
-- none); a component that is a bundle (0: none); the shop's other bundles.
-- $1 shop, $2 bundle, $3 components.
SELECT EXISTS (SELECT 1 FROM inventory_levels l WHERE l.shop_id = $1::bigint AND l.inventory_item_id = $2::bigint),
       coalesce((SELECT min(b.bundle_id) FROM bundle_components b
                 WHERE b.shop_id = $1::bigint AND b.component_id = $2::bigint), 0),
       coalesce((SELECT min(b.bundle_id) FROM bundle_components b
                 WHERE b.shop_id = $1::bigint AND b.bundle_id = ANY ($3::bigint[])), 0),
       (SELECT count(DISTINCT b.bundle_id) FROM bundle_components b
        WHERE b.shop_id = $1::bigint AND b.bundle_id <> $2::bigint)::int
