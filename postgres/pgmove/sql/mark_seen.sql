SELECT EXISTS (SELECT 1 FROM holdfast_move_marks WHERE shop_id = $1 AND mark = $2)
