-- Derived key events: for each key the sequencer just saw change, whether
-- it is sold out now (nothing sellable to a new buyer: available - safety
-- - held <= 0, or the key has waiters), compared with what was last
-- reported; a change becomes a key.sold_out or key.back_in_stock event
-- (sequenced by the next batch). A key seen for the first time reports
-- only a sold-out state. Derived at sequencing time, not in the change's
-- transaction. $1 shops, $2 items, $3 locations.
WITH k AS (
    SELECT DISTINCT shop_id, item, loc
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(shop_id, item, loc)
), s AS (
    SELECT k.shop_id, k.item, k.loc, l.available,
           l.available - l.safety - coalesce((SELECT sum(r.held) FROM held_counts r
                                              WHERE r.shop_id = k.shop_id AND r.inventory_item_id = k.item
                                                AND r.location_id = k.loc), 0) <= 0
           OR EXISTS (SELECT 1 FROM waiter_lines w
                      WHERE w.shop_id = k.shop_id AND w.inventory_item_id = k.item
                        AND w.location_id = k.loc) AS sold_out
    FROM k JOIN inventory_levels l
      ON l.shop_id = k.shop_id AND l.inventory_item_id = k.item AND l.location_id = k.loc
), prev AS (
    SELECT s.*, e.sold_out AS was
    FROM s LEFT JOIN holdfast_event_keys e
      ON e.shop_id = s.shop_id AND e.inventory_item_id = s.item AND e.location_id = s.loc
), up AS (
    INSERT INTO holdfast_event_keys (shop_id, inventory_item_id, location_id, sold_out)
    SELECT shop_id, item, loc, sold_out FROM prev WHERE was IS DISTINCT FROM sold_out
    ON CONFLICT (shop_id, inventory_item_id, location_id) DO UPDATE SET sold_out = excluded.sold_out
)
INSERT INTO holdfast_events (shop_id, type, inventory_item_id, location_id, available)
SELECT shop_id, CASE WHEN sold_out THEN 'key.sold_out' ELSE 'key.back_in_stock' END, item, loc, available
FROM prev
WHERE (was IS NULL AND sold_out) OR was <> sold_out
ORDER BY shop_id, item, loc
