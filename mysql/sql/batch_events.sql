-- The hold.created events of the holds a combined batch created
-- (batch_holds.sql marks them so the per-row trigger skips them): one row
-- per shop of the batch (migration 23), covering n cursors, its holds in
-- grouped in the batch's order (which is their cursor order); a shop with
-- one hold gets a row of one event, as the trigger writes it. ? now
-- (batch_holds' reading), ? granted as batch_holds has it.
INSERT INTO holdfast_events (shop_id, type, n, checkout_id, cart, expires_at, grouped, created_at)
SELECT g.shop, 'hold.created', COUNT(*),
       IF(COUNT(*) = 1, UNHEX(MIN(g.id)), NULL),
       IF(COUNT(*) = 1, MIN(g.cart), NULL),
       IF(COUNT(*) = 1, t.now + INTERVAL MIN(g.ttl) MICROSECOND, NULL),
       IF(COUNT(*) = 1, NULL,
          JSON_ARRAYAGG(JSON_ARRAY(g.id, JSON_EXTRACT(g.cart, '$'), t.now + INTERVAL g.ttl MICROSECOND) ORDER BY g.n)),
       t.now
FROM (SELECT CAST(? AS DATETIME(6)) AS now) t
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT        PATH '$[0]',
         id   VARCHAR(32)   PATH '$[1]',
         ttl  BIGINT        PATH '$[5]',
         cart VARCHAR(4000) PATH '$[6]')) g
GROUP BY g.shop, t.now
ORDER BY MIN(g.n)
