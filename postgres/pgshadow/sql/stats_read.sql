SELECT shop_id, op, kind, n, legacy_buckets, holdfast_buckets FROM holdfast_shadow_stats ORDER BY shop_id, op, kind
