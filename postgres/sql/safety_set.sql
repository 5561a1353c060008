-- Set a key's safety stock, creating its level row (available 0) when new.
-- Run under the key's lock after its buffers were shrunk to fit.
-- $1 shop, $2 item, $3 location, $4 safety.
INSERT INTO inventory_levels AS l (shop_id, inventory_item_id, location_id, available, safety)
VALUES ($1::bigint, $2::bigint, $3::bigint, 0, $4::int)
ON CONFLICT (shop_id, inventory_item_id, location_id)
DO UPDATE SET safety = EXCLUDED.safety, updated_at = clock_timestamp()
