-- Record an entrant; no row: the buyer entered already. $1 shop, $2 item,
-- $3 location, $4 buyer hash, $5 checkout, $6 wait µs.
INSERT INTO drop_entries (shop_id, inventory_item_id, location_id, buyer_hash, checkout_id, wait_us)
VALUES ($1::bigint, $2::bigint, $3::bigint, $4::bytea, $5::uuid, $6::bigint)
ON CONFLICT (shop_id, inventory_item_id, location_id, buyer_hash) DO NOTHING
RETURNING 1
