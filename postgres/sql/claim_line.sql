-- Deduct one claimed line from the ledger and record it in the audit trail,
-- marked as a claim's entry (a hold.claimed event, not a stock.changed one).
-- CHECK (available >= 0) rejects a claim on an over-committed key.
-- $1 shop, $2 item, $3 location, $4 quantity, $5 reason, $6 reference.
WITH u AS (
    UPDATE inventory_levels
    SET available = available - $4::int, updated_at = clock_timestamp()
    WHERE shop_id = $1::bigint AND inventory_item_id = $2::bigint AND location_id = $3::bigint
    RETURNING available
)
INSERT INTO inventory_ledger (shop_id, inventory_item_id, location_id, delta, available_after, reason, reference, claim)
SELECT $1::bigint, $2::bigint, $3::bigint, -$4::int, u.available, $5::text, $6::text, true FROM u
RETURNING available_after
