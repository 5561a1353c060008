-- $3: the shop enters shadow from legacy now, so its warming starts again.
WITH up AS (
    UPDATE holdfast_shadow_modes
    SET mode = $2,
        shadow_since = CASE WHEN $3::boolean THEN coalesce($5::timestamptz, clock_timestamp()) ELSE shadow_since END,
        changed_at = clock_timestamp()
    WHERE shop_id = $1
    RETURNING shop_id
), ev AS (
    INSERT INTO holdfast_shadow_mode_changes (shop_id, from_mode, to_mode, reason)
    SELECT $1, $6, $2, $4 FROM up
)
UPDATE holdfast_shadow_revision SET revision = revision + 1 WHERE EXISTS (SELECT 1 FROM up)
