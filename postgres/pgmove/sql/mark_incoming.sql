-- In the copy's transaction: a gone mark (the shop left this pod once) is
-- replaced; an incoming one means an unfinished move (the caller checked).
INSERT INTO holdfast_shop_fences (shop_id, state, pod) VALUES ($1, 'incoming', $2)
ON CONFLICT (shop_id) DO UPDATE SET state = 'incoming', pod = $2, since = clock_timestamp()
WHERE holdfast_shop_fences.state = 'gone'
RETURNING shop_id
