SELECT mode, shadow_since, clock_timestamp() FROM holdfast_shadow_modes WHERE shop_id = $1 FOR UPDATE
