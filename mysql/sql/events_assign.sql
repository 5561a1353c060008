-- Give a batch of events their cursors. ? [[shop, id, seq], …] (JSON); ids
-- are unique per shop (migration 15: a moved shop's events keep theirs).
UPDATE holdfast_events e
JOIN JSON_TABLE(?, '$[*]' COLUMNS (shop BIGINT PATH '$[0]', id BIGINT PATH '$[1]', seq BIGINT PATH '$[2]')) j
  ON e.shop_id = j.shop AND e.id = j.id
SET e.seq = j.seq
WHERE e.seq IS NULL
