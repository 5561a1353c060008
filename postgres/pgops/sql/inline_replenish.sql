-- Keys whose buyers paid for a refill (inline replenishment), most first.
-- $1 bounds the rows.
SELECT shop_id, inventory_item_id, location_id, inline_count, last_inline_at,
       (SELECT count(*) FROM replenish_stats)::int
FROM replenish_stats
ORDER BY inline_count DESC, last_inline_at DESC NULLS LAST
LIMIT $1::int
