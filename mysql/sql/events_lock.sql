-- The sequencer's lock row: one sequencer at a time across every process;
-- no row when another transaction holds it.
SELECT id FROM holdfast_event_sequencer WHERE id = 1 FOR UPDATE SKIP LOCKED
