-- Insert if absent, answer what holds: the first assignment wins. When a
-- concurrent assignment committed after this statement's snapshot, neither
-- branch sees a row and the caller looks the shop up again.
WITH ins AS (
    INSERT INTO holdfast_shop_pods (shop_id, pod) VALUES ($1, $2)
    ON CONFLICT (shop_id) DO NOTHING
    RETURNING shop_id, pod, epoch, assigned_at
)
SELECT shop_id, pod, epoch, assigned_at FROM ins
UNION ALL
SELECT shop_id, pod, epoch, assigned_at FROM holdfast_shop_pods WHERE shop_id = $1
LIMIT 1
