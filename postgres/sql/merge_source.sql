-- End a merged checkout's hold (locked and checked held by this
-- transaction): released, its lines record marked with the destination
-- (engine.PlanMerge). Its reserved lines move in merge_lines.sql.
-- $1 checkout, $2 shop, $3 marked lines json, $4 now (NULL: database clock).
UPDATE holds
SET status = 'released', lines = $3::jsonb,
    ended_at = coalesce($4::timestamptz, clock_timestamp())
WHERE checkout_id = $1::uuid AND shop_id = $2::bigint AND status = 'held'
