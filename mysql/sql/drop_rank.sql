-- Record a drawn drop's entrants' ranks. ? checkouts in lottery order
-- (JSON array of hex ids), ? shop, ? item, ? location.
UPDATE drop_entries e
JOIN JSON_TABLE(?, '$[*]' COLUMNS (n FOR ORDINALITY, id CHAR(32) PATH '$')) o
  ON e.checkout_id = UNHEX(o.id)
SET e.draw_rank = o.n
WHERE e.shop_id = ? AND e.inventory_item_id = ? AND e.location_id = ?
