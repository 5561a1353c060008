-- Remove a checkout's active hold lines. $1 checkout, $2 shop.
DELETE FROM reserved_quantities WHERE shop_id = $2::bigint AND checkout_id = $1::uuid
