-- End a merged checkout's hold (locked and checked held by this
-- transaction): released, its lines record marked with the destination
-- (engine.PlanMerge). Its reserved lines move in merge_lines*.sql.
-- ? marked lines json, ? now (NULL: database clock), ? shop, ? checkout.
UPDATE holds
SET status = 'released', cart = ?, ended_at = COALESCE(?, UTC_TIMESTAMP(6))
WHERE shop_id = ? AND checkout_id = ? AND status = 'held'
