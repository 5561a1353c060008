INSERT INTO holdfast_shadow_samples (shop_id, op, kind, request, legacy, holdfast) VALUES ($1, $2, $3, $4, $5, $6)
