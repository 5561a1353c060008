-- A shop's last assigned cursor (0: none yet), read before its events so
-- that an empty page can tell purged events from none. ? shop.
SELECT COALESCE((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = ?), 0)
