-- A page of a shop's audit log, newest first: keyset pagination on id
-- through its primary key (shop_id, id).
-- $1 shop, $2 cursor id (NULL: the first page), $3 action ('': any),
-- $4 key id (0: any), $5 rows.
SELECT id, shop_id, action, coalesce(key_id, 0), actor, remote, request_id, detail::text, created_at
FROM audit_log
WHERE shop_id = $1::bigint
  AND id < coalesce($2::bigint, 9223372036854775807)
  AND ($3::text = '' OR action = $3::text)
  AND ($4::bigint = 0 OR key_id = $4::bigint)
ORDER BY id DESC
LIMIT $5::int
