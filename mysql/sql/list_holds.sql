-- A page of a shop's holds and outcomes, newest first: keyset pagination on
-- (created_at, checkout_id), read backwards through holds_shop_created
-- (migration 006). A hold held past its expiry and not swept yet is listed
-- (and filtered) as expired. The lines filter is JSON containment: the
-- hold has a line with that item and/or location, or (the companion
-- filter, the location negated) keeps pre-ordered units of it.
-- ? now, ? shop, ? cursor created_at twice and ? cursor checkout (the
-- first page: past every row), ? lines filter (NULL: any) twice, ?
-- companion lines filter (NULL: none), ? status
-- ('' any) twice, ? rows.
SELECT h.checkout_id, h.status, h.cart, h.created_at, h.expires_at, h.deadline, h.ended_at,
       h.status = 'held' AND h.expires_at < t.now AS lapsed, h.revision, h.released
FROM holds h
JOIN (SELECT COALESCE(?, UTC_TIMESTAMP(6)) AS now) t
WHERE h.shop_id = ?
  AND (h.created_at < ? OR (h.created_at = ? AND h.checkout_id < ?))
  AND (? IS NULL OR JSON_CONTAINS(h.cart, ?) OR JSON_CONTAINS(h.cart, ?))
  AND (? = '' OR
       (CASE WHEN h.status = 'held' AND h.expires_at < t.now THEN 'expired' ELSE h.status END) = ?)
ORDER BY h.created_at DESC, h.checkout_id DESC
LIMIT ?
