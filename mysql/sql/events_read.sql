-- A shop's sequenced events after a cursor (the feed), at most limit of
-- them, in no particular order: the caller sorts them by cursor. A row
-- covers the cursors seq .. seq + n - 1 (migration 23): a grouped row's
-- holds are expanded, one event each at cursor seq + ordinal - 1, so a
-- page may begin and end inside a group. w is the page's bounds: lo, the
-- first row with a cursor past after (the row at or before after, when its
-- group reaches past it, else the next row), c0 its first such cursor and
-- hi = c0 + limit - 1 (cursors are dense from c0 on; a purged hole only
-- shortens the page, as the engine cuts it at the first gap). Only the rows
-- lo .. hi of the (shop_id, seq) key are read and expanded, at most limit,
-- and nothing is sorted here: a sort of the expanded rows went through two
-- on-disk temporary tables per page (their JSON columns).
-- ? shop, ? after, ? limit, ? shop.
SELECT e.seq + COALESCE(g.ord, 1) - 1, e.type,
       COALESCE(UNHEX(g.checkout), e.checkout_id), COALESCE(g.cart, e.cart), COALESCE(g.expires_at, e.expires_at),
       e.inventory_item_id, e.location_id, e.delta, e.available, e.reason, e.reference, e.created_at
FROM (SELECT b.lo, GREATEST(b.after + 1, b.lo) AS c0, GREATEST(b.after + 1, b.lo) + b.lim - 1 AS hi
      FROM (SELECT COALESCE((SELECT IF(p.seq + p.n - 1 > a.after, p.seq, NULL) FROM holdfast_events p
                             WHERE p.shop_id = a.shop AND p.seq <= a.after
                             ORDER BY p.seq DESC
                             LIMIT 1),
                            (SELECT MIN(f.seq) FROM holdfast_events f WHERE f.shop_id = a.shop AND f.seq > a.after)) AS lo,
                   a.after, a.lim
            FROM (SELECT CAST(? AS SIGNED) AS shop, CAST(? AS SIGNED) AS after, CAST(? AS SIGNED) AS lim) a) b) w
STRAIGHT_JOIN holdfast_events e ON e.shop_id = ? AND e.seq BETWEEN w.lo AND w.hi
LEFT JOIN JSON_TABLE(e.grouped, '$[*]' COLUMNS (
         ord        FOR ORDINALITY,
         checkout   VARCHAR(32) PATH '$[0]',
         cart       JSON        PATH '$[1]',
         expires_at DATETIME(6) PATH '$[2]')) g ON TRUE
WHERE e.seq + COALESCE(g.ord, 1) - 1 BETWEEN w.c0 AND w.hi
