-- The database's now (UTC), or the injected clock's. ? now (NULL: the
-- database's).
SELECT CAST(COALESCE(?, UTC_TIMESTAMP(6)) AS DATETIME(6))
