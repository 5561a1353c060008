-- A shop's feed head (0: none yet), read on its own: a plain read takes no
-- lock, where a subquery of the INSERT would take a shared lock on the
-- shop's row and wait for the sequencer. ? shop.
SELECT COALESCE((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = ?), 0)
