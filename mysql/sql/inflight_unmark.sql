-- Delete the in-flight mark this transaction just wrote (its lock stays),
-- unless the shop is fenced: the placement guard's two checks (migration
-- 15), made here because reserve_inflight has no guard trigger (migration
-- 22), and made under the mark's lock as that AFTER trigger made them.
-- No row deleted means fenced (the mark was just inserted): the driver
-- answers SQLSTATE HF001 (inflight.go). ? shop, ? checkout.
DELETE FROM reserve_inflight
WHERE shop_id = ? AND checkout_id = ?
  AND (@holdfast_move IS NOT NULL
       OR (IS_USED_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', shop_id)) IS NULL
           AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = reserve_inflight.shop_id)))
