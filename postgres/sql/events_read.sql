-- A shop's sequenced events after a cursor, in cursor order (the feed).
-- $1 shop, $2 after, $3 limit.
--
-- A row of a statement's holds (migration 28) covers cursors seq .. seq +
-- n - 1 and is expanded here into its events, so a page may begin and end
-- inside one. Bounded: from the row holding cursor $2 + 1 (or the first
-- after it), at most $3 + 1 rows by the feed index, and of those only the
-- rows before the page is full are expanded.
WITH r AS (
    SELECT e.*,
           -- the cursors after $2 in the rows before this one
           coalesce(sum(greatest(0, least(e.n, e.seq + e.n - 1 - $2::bigint)))
                    OVER (ORDER BY e.seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM (SELECT * FROM holdfast_events
          WHERE shop_id = $1::bigint AND seq IS NOT NULL
            AND seq >= coalesce((SELECT seq FROM holdfast_events
                                 WHERE shop_id = $1::bigint AND seq IS NOT NULL AND seq <= $2::bigint + 1
                                 ORDER BY seq DESC LIMIT 1), 0)
          ORDER BY seq
          LIMIT $3::int + 1) e
)
SELECT r.seq + x.i - 1 AS cursor, r.type, x.checkout_id, x.lines, x.expires_at,
       r.inventory_item_id, r.location_id, r.delta, r.available, r.reason, r.reference, r.created_at
FROM r,
     LATERAL (SELECT 1::bigint, r.checkout_id, r.lines, r.expires_at WHERE r.group_checkouts IS NULL
              UNION ALL
              SELECT g.i, g.checkout_id, g.lines, g.expires_at
              FROM unnest(r.group_checkouts, r.group_lines, r.group_expires)
                   WITH ORDINALITY AS g(checkout_id, lines, expires_at, i)) x(i, checkout_id, lines, expires_at)
WHERE r.before < $3::int AND r.seq + x.i - 1 > $2::bigint
ORDER BY 1
LIMIT $3::int
