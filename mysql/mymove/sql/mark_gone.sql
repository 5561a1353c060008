-- ? shop, ? the pod it moved to.
INSERT INTO holdfast_shop_fences (shop_id, state, pod, since) VALUES (?, 'gone', ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE state = 'gone', pod = VALUES(pod), since = VALUES(since)
