-- A page of a shop's holds and outcomes, newest first: keyset pagination on
-- (created_at, checkout_id), read through holds_shop_created (migration
-- 009). A hold held past its expiry and not swept yet is listed (and
-- filtered) as expired. The lines filter is JSON containment: the hold has
-- a line with that item and/or location, or (the companion filter, the
-- location negated) keeps pre-ordered units of it.
-- $1 shop, $2 lines filter jsonb (NULL: any), $3 status ('' any),
-- $4 cursor created_at and $5 cursor checkout (NULL: the first page; the
-- row comparison stays an index condition either way, so a later page
-- starts where the previous one ended instead of walking past it),
-- $6 rows, $7 now (NULL: database clock), $8 companion lines filter
-- (NULL: none).
SELECT h.checkout_id, h.status, h.lines, h.created_at, h.expires_at, h.deadline, h.ended_at,
       h.status = 'held' AND h.expires_at < t.now AS lapsed, h.revision, h.released
FROM holds h, (SELECT coalesce($7::timestamptz, clock_timestamp()) AS now) t
WHERE h.shop_id = $1::bigint
  AND (h.created_at, h.checkout_id) <
      (coalesce($4::timestamptz, 'infinity'), coalesce($5::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
  AND ($2::jsonb IS NULL OR h.lines @> $2::jsonb OR h.lines @> $8::jsonb)
  AND ($3::text = '' OR
       CASE WHEN h.status = 'held' AND h.expires_at < t.now THEN 'expired' ELSE h.status END = $3::text)
ORDER BY h.created_at DESC, h.checkout_id DESC
LIMIT $6::int
