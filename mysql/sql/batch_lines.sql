-- The lines of the holds a combined batch created (one line each: only
-- single-line reservations are combined), from the batch itself: no read
-- of the holds and no parse of their carts. ? now (batch_holds' reading),
-- ? granted as batch_holds has it.
INSERT INTO reserved_quantities (shop_id, inventory_item_id, location_id, checkout_id, quantity, expires_at)
SELECT g.shop, g.item, g.loc, UNHEX(g.id), g.qty, t.now + INTERVAL g.ttl MICROSECOND
FROM (SELECT CAST(? AS DATETIME(6)) AS now) t
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]',
         item BIGINT      PATH '$[2]',
         loc  BIGINT      PATH '$[3]',
         qty  INT         PATH '$[4]',
         ttl  BIGINT      PATH '$[5]')) g
