-- In the copy's transaction, after state_lock found no mark or a gone one
-- (the shop left this pod once): ? shop, ? the pod it comes from.
INSERT INTO holdfast_shop_fences (shop_id, state, pod, since) VALUES (?, 'incoming', ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE state = 'incoming', pod = VALUES(pod), since = VALUES(since)
