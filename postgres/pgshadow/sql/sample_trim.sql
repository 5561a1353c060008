-- Keep the newest $2 samples of shop $1.
DELETE FROM holdfast_shadow_samples
WHERE shop_id = $1 AND id < (
    SELECT min(id) FROM (SELECT id FROM holdfast_shadow_samples WHERE shop_id = $1 ORDER BY id DESC LIMIT $2) newest
)
