-- ? shop, ? change id.
SELECT request, level FROM stock_changes WHERE shop_id = ? AND change_id = ?
