-- Open drops whose window ended, earliest first. ? now (NULL: the
-- database's), ? limit.
SELECT shop_id, inventory_item_id, location_id
FROM drops
WHERE state = 'open'
  AND starts_at + INTERVAL window_us MICROSECOND <= COALESCE(?, UTC_TIMESTAMP(6))
  -- a shop being moved here or away is not this pod's to draw
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = drops.shop_id)
ORDER BY starts_at
LIMIT ?
