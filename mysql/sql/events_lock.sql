-- The sequencer's lock row: one sequencer at a time across every process.
-- Waiting for it (one short batch at most) is what lets Events answer with
-- every event committed before the call.
SELECT id FROM holdfast_event_sequencer WHERE id = 1 FOR UPDATE
