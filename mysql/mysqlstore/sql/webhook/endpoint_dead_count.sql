-- An endpoint's dead letters, counted before its removal (they go with
-- it). ? id.
SELECT COUNT(*) FROM webhook_dead_letters WHERE endpoint_id = ?
