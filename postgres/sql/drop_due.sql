-- Open drops whose window ended, earliest first. $1 now (NULL: database
-- clock), $2 limit.
SELECT shop_id, inventory_item_id, location_id
FROM drops
WHERE state = 'open'
  AND starts_at + window_us * interval '1 microsecond' <= (SELECT coalesce($1::timestamptz, clock_timestamp()))
ORDER BY starts_at
LIMIT $2::int
