-- The database's now, or the injected clock's. $1 now (NULL: the database's).
SELECT coalesce($1::timestamptz, clock_timestamp())
