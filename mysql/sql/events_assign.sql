-- Give a batch of events their cursors. ? [[id, seq], …] (JSON).
UPDATE holdfast_events e
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', seq BIGINT PATH '$[1]')) j ON e.id = j.id
SET e.seq = j.seq
WHERE e.seq IS NULL
