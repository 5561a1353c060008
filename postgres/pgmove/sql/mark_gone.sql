INSERT INTO holdfast_shop_fences (shop_id, state, pod) VALUES ($1, 'gone', $2)
ON CONFLICT (shop_id) DO UPDATE SET state = 'gone', pod = $2, since = clock_timestamp()
