-- Create the holds a combined batch granted, with one clock reading.
-- ? granted as JSON [[shop, checkout hex, cart JSON text, ttl µs], …],
-- ? lifetime µs, ? now (NULL: the database clock).
INSERT INTO holds (shop_id, checkout_id, status, cart, created_at, expires_at, deadline)
SELECT g.shop, UNHEX(g.id), 'held', g.cart, t.now, t.now + INTERVAL g.ttl MICROSECOND, t.now + INTERVAL ? MICROSECOND
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT        PATH '$[0]',
         id   VARCHAR(32)   PATH '$[1]',
         cart VARCHAR(4000) PATH '$[2]',
         ttl  BIGINT        PATH '$[3]')) g
CROSS JOIN (SELECT COALESCE(?, UTC_TIMESTAMP(6)) AS now) t
ORDER BY g.n
