-- The catch-up's barrier, written on the source under the fence: the
-- subscription applies in commit order, so the mark on the target means
-- every change of the shop committed before it is there.
INSERT INTO holdfast_move_marks (shop_id, mark) VALUES ($1, $2)
