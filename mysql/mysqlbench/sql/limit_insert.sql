-- Insert one hold row per ID: ? IDs as a JSON array of 32-digit hex strings.
INSERT INTO bench_limit_holds (shop_id, id)
SELECT 1, UNHEX(j.id) FROM JSON_TABLE(?, '$[*]' COLUMNS (id CHAR(32) PATH '$')) j
