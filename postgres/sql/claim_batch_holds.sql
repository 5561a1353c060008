-- Claim a combined batch's held checkouts (claimcombine.go): each held
-- hold becomes claimed, as end_hold.sql would make it, and its lines leave
-- reserved_quantities, as hold_lines_delete.sql would. Holds another
-- transaction has locked are skipped, never waited for, and so are holds
-- not held (claimed, released, swept, merged, none) or with pre-ordered
-- lines: the engine serves those on the plain path. Locks are taken in (shop, checkout) order.
-- $1 shops, $2 checkout ids (text), $3 now (NULL: database clock).
WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::text[]::uuid[]) AS r(shop_id, checkout_id)
), l AS (
    SELECT h.shop_id, h.checkout_id
    FROM holds h JOIN r ON h.shop_id = r.shop_id AND h.checkout_id = r.checkout_id
    WHERE h.status = 'held'
      -- a hold with pre-ordered lines (a companion key's, at a negative
      -- location) is claimed on the plain path, which records them owed
      AND NOT EXISTS (SELECT 1 FROM reserved_quantities q
                      WHERE q.shop_id = h.shop_id AND q.checkout_id = h.checkout_id AND q.location_id < 0)
    ORDER BY h.shop_id, h.checkout_id
    FOR UPDATE OF h SKIP LOCKED
), e AS (
    UPDATE holds h
    SET status = 'claimed', ended_at = coalesce($3::timestamptz, clock_timestamp())
    FROM l
    WHERE h.shop_id = l.shop_id AND h.checkout_id = l.checkout_id AND h.status = 'held'
    RETURNING h.shop_id, h.checkout_id, h.lines, h.created_at, h.expires_at, h.deadline, h.ended_at, h.revision
), d AS (
    DELETE FROM reserved_quantities q USING e
    WHERE q.shop_id = e.shop_id AND q.checkout_id = e.checkout_id
)
SELECT shop_id, checkout_id, lines, created_at, expires_at, deadline, ended_at, revision FROM e
