-- Whether any committed event waits for its cursor.
-- (Shops fenced here, migration 15, are not this pod's to sequence.)
SELECT EXISTS (SELECT 1 FROM holdfast_events e WHERE e.seq IS NULL
               AND NOT EXISTS (SELECT 1 FROM holdfast_shop_fences f WHERE f.shop_id = e.shop_id))
