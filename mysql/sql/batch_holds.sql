-- Create the holds a combined batch granted, at the batch's one clock
-- reading (batch_existing). ? now, ? lifetime µs,
-- ? granted as JSON [[shop, checkout hex, item, location, quantity, ttl µs,
-- cart JSON text], …]. grouped_event: the batch writes the holds' events
-- itself, one row per shop (batch_events.sql, migration 23), so the per-row
-- trigger skips them.
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline, grouped_event)
SELECT g.shop, UNHEX(g.id), 'held', g.cart, t.now, t.now + INTERVAL g.ttl MICROSECOND, t.now + INTERVAL t.life MICROSECOND, 1
FROM (SELECT CAST(? AS DATETIME(6)) AS now, CAST(? AS SIGNED) AS life) t
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT        PATH '$[0]',
         id   VARCHAR(32)   PATH '$[1]',
         ttl  BIGINT        PATH '$[5]',
         cart VARCHAR(4000) PATH '$[6]')) g
ORDER BY g.n
