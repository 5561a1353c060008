SELECT shop_id, pod, epoch, assigned_at FROM holdfast_shop_pods WHERE shop_id = $1
