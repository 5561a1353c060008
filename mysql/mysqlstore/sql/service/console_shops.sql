-- The shops with stock, in id order, at most ?: inventory_levels' primary
-- key starts with shop_id, so this is a loose index scan.
-- ? how many
SELECT DISTINCT shop_id FROM inventory_levels ORDER BY shop_id LIMIT ?
