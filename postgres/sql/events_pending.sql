-- Whether any committed event waits for its cursor (one probe of the
-- partial index holdfast_events_pending).
SELECT EXISTS (SELECT 1 FROM holdfast_events WHERE seq IS NULL)
