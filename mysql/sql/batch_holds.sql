-- Create the holds a combined batch granted, at the batch's one clock
-- reading (batch_existing). ? now, ? lifetime µs,
-- ? granted as JSON [[shop, checkout hex, item, location, quantity, ttl µs,
-- cart JSON text], …]. grouped_event: when grouped events are on
-- (holdfast_features, migration 23) the batch writes the holds' events
-- itself, one row per shop (batch_events.sql), so the per-row trigger
-- skips them; when off the trigger writes one per hold.
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline, grouped_event)
SELECT g.shop, UNHEX(g.id), 'held', g.cart, t.now, t.now + INTERVAL g.ttl MICROSECOND, t.now + INTERVAL t.life MICROSECOND, t.grouped
FROM (SELECT CAST(? AS DATETIME(6)) AS now, CAST(? AS SIGNED) AS life,
             (SELECT COUNT(*) FROM holdfast_features WHERE name = 'grouped_events') AS grouped) t
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT        PATH '$[0]',
         id   VARCHAR(32)   PATH '$[1]',
         ttl  BIGINT        PATH '$[5]',
         cart VARCHAR(4000) PATH '$[6]')) g
ORDER BY g.n
