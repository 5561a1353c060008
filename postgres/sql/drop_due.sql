-- Open drops whose window ended, earliest first. $1 now (NULL: database
-- clock), $2 limit.
SELECT shop_id, inventory_item_id, location_id
FROM drops
WHERE state = 'open'
  AND starts_at + window_us * interval '1 microsecond' <= (SELECT coalesce($1::timestamptz, clock_timestamp()))
  -- a shop being moved here or away is not this pod's to draw
  AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = drops.shop_id OFFSET 0)
ORDER BY starts_at
LIMIT $2::int
