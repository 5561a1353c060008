-- A combined batch's first write: the in-flight marks of its checkouts (in
-- checkout order, so two batches never wait on each other's in a cycle),
-- deleted again by inflight_unmark_batch. ? batch as JSON [[shop, checkout
-- hex], …], sorted.
INSERT INTO reserve_inflight (shop_id, checkout_id)
SELECT g.shop, UNHEX(g.id)
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         n    FOR ORDINALITY,
         shop BIGINT      PATH '$[0]',
         id   VARCHAR(32) PATH '$[1]')) g
ORDER BY g.n
