-- Record each shop's last cursor (only the sequencer writes this table,
-- under its lock row). ? [[shop, last], …] (JSON).
INSERT INTO holdfast_event_shops (shop_id, last_seq)
SELECT j.shop, j.last FROM JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$[0]', last BIGINT PATH '$[1]')) j
ON DUPLICATE KEY UPDATE last_seq = VALUES(last_seq)
