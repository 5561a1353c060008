-- Remove a checkout's active hold lines. $1 checkout.
DELETE FROM reserved_quantities WHERE checkout_id = $1::uuid
