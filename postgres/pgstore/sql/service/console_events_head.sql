-- A shop's newest event cursor (0: none yet), as the sequencer last
-- assigned it: where the console's recent events end.
-- $1 shop
SELECT coalesce((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = $1::bigint), 0)
