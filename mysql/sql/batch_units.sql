-- Read one counter row of a combined batch without locking it (the latest
-- committed units, READ COMMITTED): an optimistic batch takes its units
-- last (take_counter), so that its row is locked only from its take to
-- its COMMIT. ? shop, ? item, ? location.
SELECT units FROM inventory_counters
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?
