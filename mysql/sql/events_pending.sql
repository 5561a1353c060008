-- Whether any committed event waits for its cursor.
SELECT EXISTS (SELECT 1 FROM holdfast_events WHERE seq IS NULL)
