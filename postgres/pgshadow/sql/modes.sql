SELECT m.shop_id, m.mode, m.shadow_since, m.changed_at, r.revision
FROM holdfast_shadow_modes m CROSS JOIN holdfast_shadow_revision r
ORDER BY m.shop_id
