SELECT coalesce((SELECT on_hand FROM legacy_redis_ledger
                 WHERE shop_id = $1 AND item_id = $2 AND location_id = $3), 0)
