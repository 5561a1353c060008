UPDATE legacy_redis_ledger SET on_hand = $4
WHERE shop_id = $1 AND item_id = $2 AND location_id = $3
