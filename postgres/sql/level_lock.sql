-- Create a key's level row when missing, lock it, and return its available.
-- $1 shop, $2 item, $3 location.
INSERT INTO inventory_levels AS l (shop_id, inventory_item_id, location_id, available)
VALUES ($1::bigint, $2::bigint, $3::bigint, 0)
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET updated_at = l.updated_at
RETURNING available
