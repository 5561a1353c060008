DELETE FROM holdfast_shop_fences WHERE shop_id = $1 AND state = $2
