SELECT shop_id, from_mode, to_mode, reason, changed_at FROM holdfast_shadow_mode_changes
WHERE shop_id = $1 ORDER BY id DESC LIMIT $2
