-- Where a new endpoint starts: after every event of the shop committed
-- before the registration, the shop's feed head plus the shop's events
-- committed but not yet given a cursor (the sequencer numbers them next,
-- per shop in a row; a row counts its n cursors, migration 23: a
-- combined batch's group of hold.created events), in one statement (one
-- snapshot: a sequencer committing in between cannot count an event twice
-- or not at all). A
-- plain read takes no lock, where a subquery of the INSERT would take a
-- shared lock on the shop's row and wait for the sequencer. ? shop, shop.
SELECT COALESCE((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = ?), 0)
     + (SELECT COALESCE(SUM(n), 0) FROM holdfast_events WHERE shop_id = ? AND seq IS NULL)
