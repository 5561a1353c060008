-- The hold.created events of the holds a combined batch created
-- (batch_holds.sql marks them so the per-row trigger skips them, when
-- grouped events are on): one row per shop of the batch (migration 23),
-- covering its n holds. A shop's one
-- hold gets a row of one event, as the trigger writes it; a group keeps
-- its holds in grouped, in cursor order. ? now (batch_holds' reading: the
-- holds' created_at), ? the rows as JSON (combine.go, appendBatchEvents):
-- [{"s": shop, "n": 1, "c": checkout hex, "l": cart, "e": expires_at} or
-- {"s": shop, "n": n, "g": [[checkout hex, cart, expires_at], …]}, …].
INSERT INTO holdfast_events (shop_id, type, n, checkout_id, cart, expires_at, grouped, created_at)
SELECT j.shop, 'hold.created', j.n, UNHEX(j.id), j.cart, j.expires_at, j.grouped, CAST(? AS DATETIME(6))
FROM JSON_TABLE(?, '$[*]' COLUMNS (
         shop       BIGINT      PATH '$.s',
         n          INT         PATH '$.n',
         id         VARCHAR(32) PATH '$.c',
         cart       JSON        PATH '$.l',
         expires_at DATETIME(6) PATH '$.e',
         grouped    JSON        PATH '$.g',
         first      VARCHAR(32) PATH '$.g[0][0]')) j
-- only for holds batch_holds.sql marked: grouped events on when it ran
WHERE EXISTS (SELECT 1 FROM holds h
              WHERE h.shop_id = j.shop AND h.checkout_id = UNHEX(COALESCE(j.id, j.first))
                AND h.grouped_event = 1)
