-- An endpoint's dead letters, counted before its removal (they go with
-- it). ? shop, id.
SELECT COUNT(*) FROM webhook_dead_letters WHERE shop_id = ? AND endpoint_id = ?
