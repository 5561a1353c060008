UPDATE holdfast_shop_pods SET pod = $4, epoch = epoch + 1, assigned_at = now()
WHERE shop_id = $1 AND pod = $2 AND epoch = $3
RETURNING shop_id, pod, epoch, assigned_at
