DELETE FROM holdfast_move_marks WHERE shop_id = $1
