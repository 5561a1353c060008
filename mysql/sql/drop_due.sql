-- Open drops whose window ended, earliest first. ? now (NULL: the
-- database's), ? limit.
SELECT shop_id, inventory_item_id, location_id
FROM drops
WHERE state = 'open'
  AND starts_at + INTERVAL window_us MICROSECOND <= COALESCE(?, UTC_TIMESTAMP(6))
ORDER BY starts_at
LIMIT ?
