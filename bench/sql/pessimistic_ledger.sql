-- Step 4 of the single-row pessimistic pattern: the ledger entry. $1 shop, $2 item, $3 location,
-- $4 quantity, $5 reservation (checkout) id.
INSERT INTO bench_pessimistic_ledger (shop_id, inventory_item_id, location_id, quantity, type, reservation_id)
VALUES ($1, $2, $3, -$4::int, 'RESERVATION', $5)
