SELECT id, shop_id, op, kind, request, legacy, holdfast, recorded_at
FROM holdfast_shadow_samples WHERE shop_id = $1 ORDER BY id DESC LIMIT $2
