WITH ins AS (
    INSERT INTO holdfast_shadow_modes (shop_id)
    SELECT unnest($1::bigint[])
    ON CONFLICT DO NOTHING
    RETURNING 1
)
UPDATE holdfast_shadow_revision SET revision = revision + 1
WHERE EXISTS (SELECT 1 FROM ins)
