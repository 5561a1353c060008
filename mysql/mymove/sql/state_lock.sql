SELECT state FROM holdfast_shop_fences WHERE shop_id = ? FOR UPDATE
