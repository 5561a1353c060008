-- A shop's sequenced events after a cursor, in cursor order (the feed).
-- A row covers the cursors seq .. seq + n - 1 (migration 23): a grouped
-- row's holds are expanded, one event each at cursor seq + ordinal - 1, so
-- a page may begin and end inside a group. Bounded: only the rows that can
-- hold the page's cursors are read from the (shop_id, seq) key and
-- expanded: the row at or before after (its group may reach past it), and
-- the rows from the first after it (s) up to s + limit - 1 (cursors are
-- dense from s on: at most limit rows).
-- ? shop, ? after, ? shop, ? after, ? shop, ? after, ? limit, ? limit,
-- ? after, ? limit.
SELECT e.seq + COALESCE(g.ord, 1) - 1, e.type,
       COALESCE(UNHEX(g.checkout), e.checkout_id), COALESCE(g.cart, e.cart), COALESCE(g.expires_at, e.expires_at),
       e.inventory_item_id, e.location_id, e.delta, e.available, e.reason, e.reference, e.created_at
FROM ((SELECT seq, type, checkout_id, cart, expires_at, inventory_item_id, location_id,
              delta, available, reason, reference, created_at, grouped
       FROM holdfast_events
       WHERE shop_id = ? AND seq <= ?
       ORDER BY seq DESC
       LIMIT 1)
      UNION ALL
      (SELECT seq, type, checkout_id, cart, expires_at, inventory_item_id, location_id,
              delta, available, reason, reference, created_at, grouped
       FROM holdfast_events
       WHERE shop_id = ? AND seq > ?
         AND seq < (SELECT MIN(f.seq) FROM holdfast_events f WHERE f.shop_id = ? AND f.seq > ?) + ?
       ORDER BY seq
       LIMIT ?)) e
LEFT JOIN JSON_TABLE(e.grouped, '$[*]' COLUMNS (
         ord        FOR ORDINALITY,
         checkout   VARCHAR(32) PATH '$[0]',
         cart       JSON        PATH '$[1]',
         expires_at DATETIME(6) PATH '$[2]')) g ON TRUE
WHERE e.seq + COALESCE(g.ord, 1) - 1 > ?
ORDER BY 1
LIMIT ?
