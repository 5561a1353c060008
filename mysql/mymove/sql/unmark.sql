-- ? shop, ? state.
DELETE FROM holdfast_shop_fences WHERE shop_id = ? AND state = ?
