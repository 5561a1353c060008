-- Bump the probe, autocommitted; LAST_INSERT_ID carries the new value back
-- in the OK packet.
UPDATE isolation_probe SET n = LAST_INSERT_ID(n + 1) WHERE id = 1
