-- A page of a shop's audit log, newest first: keyset pagination on id
-- through audit_log_shop.
-- ? shop, ? cursor id (the first page: past every id), ? action and
-- ? action again ('': any), ? key id and ? key id again (0: any), ? rows.
SELECT id, shop_id, action, COALESCE(key_id, 0), actor, remote, request_id, detail, created_at
FROM audit_log
WHERE shop_id = ?
  AND id < ?
  AND (? = '' OR action = ?)
  AND (? = 0 OR key_id = ?)
ORDER BY id DESC
LIMIT ?
