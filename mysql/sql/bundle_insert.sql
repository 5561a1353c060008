-- Insert a bundle's components (after bundle_delete.sql), in the order
-- given. ? shop, ? bundle, ? now, ? components (JSON of item_id, quantity).
INSERT INTO bundle_components (shop_id, bundle_id, component_id, quantity, position, updated_at)
SELECT s.shop, s.bundle, j.id, j.qty, j.n, s.at
FROM (SELECT ? AS shop, ? AS bundle, COALESCE(?, UTC_TIMESTAMP(6)) AS at) s
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n   FOR ORDINALITY,
         id  BIGINT PATH '$.item_id',
         qty INT    PATH '$.quantity')) j
