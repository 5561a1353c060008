-- Changes within the last $1 milliseconds (the database's clock), oldest
-- first.
SELECT revision, shop_id FROM holdfast_shop_pod_changes
WHERE changed_at > now() - $1::bigint * interval '1 millisecond'
ORDER BY revision LIMIT $2
