-- An allocated hold's events as one: its hold row was inserted (hold.created,
-- by the trigger) before the locations were chosen, with no lines, and
-- alloc_hold_lines.sql then set them (hold.edited). Both rows are this
-- transaction's and not yet sequenced (seq is set after commit): the
-- created event takes the resolved lines and the edited one goes.
-- $1 checkout, $2 shop.
WITH edited AS (
    DELETE FROM holdfast_events
    WHERE seq IS NULL AND shop_id = $2::bigint AND checkout_id = $1::uuid AND type = 'hold.edited'
    RETURNING lines
)
UPDATE holdfast_events
SET lines = (SELECT lines FROM edited LIMIT 1)
WHERE seq IS NULL AND shop_id = $2::bigint AND checkout_id = $1::uuid AND type = 'hold.created'
  AND EXISTS (SELECT 1 FROM edited)
